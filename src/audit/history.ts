import { Effect, Stream } from "effect"
import { oneAccount } from "../domain/account/events.js"
import { isRowBodiesSubject, oneBatch, withoutRowBodies } from "../domain/batch/subjects.js"
import { filePartSubject, isFilePartSubject, oneFile } from "../domain/file/events.js"
import { oneStream } from "../domain/stream/events.js"
import type { EventLogShape, LogMessage } from "../eventlog/EventLog.js"

export interface HistoryEntry {
  readonly seq: number
  /** When the log stored it (ms). */
  readonly time: number
  readonly subject: string
  readonly type: string
  readonly event: Record<string, unknown>
}

const text = new TextDecoder()

/** The request and response bodies, which an auditor asks for on purpose: they are most of the bytes, and the users' data. */
const withoutBodies = (event: Record<string, any>): Record<string, unknown> => {
  switch (event.type) {
    case "row_bodies":
      return { ...event, bodies: `(${(event.bodies as Array<unknown>).length} request bodies; --bodies shows them)` }
    case "rows_added":
      return { ...event, rows: (event.rows as Array<Record<string, unknown>>).map(({ body: _, ...row }) => row) }
    case "row_completed":
      return { ...event, response: { ...event.response, body: "(--bodies shows it)" } }
    default:
      return event
  }
}

/** A message's events: one, or each of a lane window's row events at the window's seq. */
const entries = (bodies: boolean) => (m: LogMessage): ReadonlyArray<HistoryEntry> => {
  // The embedded log leaves large request bodies where they are when they are not asked for.
  if (m.data.length === 0 && isRowBodiesSubject(m.subject)) {
    return [{ seq: m.seq, time: m.time, subject: m.subject, type: "row_bodies", event: { bodies: "(--bodies shows them)" } }]
  }
  let event: Record<string, any>
  try {
    event = JSON.parse(text.decode(m.data))
  } catch {
    return [{ seq: m.seq, time: m.time, subject: m.subject, type: "(not JSON)", event: {} }]
  }
  const events: ReadonlyArray<Record<string, any>> = event.type === "lane_window" && Array.isArray(event.events) ? event.events : [event]
  return events.map((e) => ({ seq: m.seq, time: m.time, subject: m.subject, type: String(e.type), event: bodies ? e : withoutBodies(e) }))
}

const collect = (log: EventLogShape, filter: string, bodies: boolean) =>
  Effect.map(
    Stream.runCollect(log.read(filter, 1, bodies ? {} : withoutRowBodies)),
    (chunk) => [...chunk].flatMap(entries(bodies)),
  )

/** Every event of one batch (or response), in log order: a tombstone alone once it was deleted. */
export const batchHistory = (log: EventLogShape, batchId: string, bodies: boolean) => collect(log, oneBatch(batchId), bodies)

/** Every event of one stream, in log order: a tombstone alone once it was purged. */
export const streamHistory = (log: EventLogShape, streamId: string) => collect(log, oneStream(streamId), false)

/**
 * Every message of one uploaded file, in log order: its parts, numbered (their bytes are the file's
 * content, not events, and are left unread where the log can), then its events; its tombstone alone once
 * it was purged.
 */
export const fileHistory = (log: EventLogShape, fileId: string) =>
  Effect.map(Stream.runCollect(log.read(oneFile(fileId), 1, { withoutDataOn: filePartSubject(fileId) })), (chunk) => {
    let part = 0
    return [...chunk].flatMap((m): ReadonlyArray<HistoryEntry> =>
      isFilePartSubject(m.subject) ? [{ seq: m.seq, time: m.time, subject: m.subject, type: "part", event: { part: part++ } }] : entries(false)(m),
    )
  })

/** Every event of one account and its keys. */
export const accountHistory = (log: EventLogShape, accountId: string) =>
  collect(log, oneAccount(accountId), false)

/** One line per event: seq, time, type, and what it says (its row and attempt for a row event). */
export const historyLine = (e: HistoryEntry) => {
  const { type: _, batch_id: __, account_id: ___, stream_id: ____, file_id: _____, ...rest } = e.event
  return `${String(e.seq).padStart(8)}  ${new Date(e.time).toISOString()}  ${e.type.padEnd(18)}  ${JSON.stringify(rest)}`
}
