import { jetstream, jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import Database from "better-sqlite3"
import { join } from "node:path"
import { laneSubject } from "../../src/domain/batch/subjects.js"

export interface StoredEvent {
  readonly seq: number
  readonly subject: string
  readonly type: string
  readonly row?: number
  readonly attempt?: number
  /** A lane window's lease revision, on each of its events. */
  readonly lease?: number
  /** The stored event itself, for the events stored one per message. */
  readonly payload?: Readonly<Record<string, unknown>>
  /** When the log stored its message (wall clock, ms), where the read asked for it. */
  readonly time?: number
}

/**
 * Only the small events are decoded: a chunked part of a large one is not JSON on its own. A lane
 * window gives each of its row events, all at the window's seq.
 */
const decode = (seq: number, subject: string, data: Uint8Array, time?: number): Array<StoredEvent> => {
  const type = subject.slice(subject.lastIndexOf(".") + 1)
  const stored = time === undefined ? {} : { time }
  if (type === "rows_added" || type === "row_bodies") return [{ seq, subject, type, ...stored }]
  let payload: { type?: string; row?: number; attempt?: number; lease?: number; events?: Array<{ type: string; row: number; attempt: number }> }
  try {
    payload = JSON.parse(Buffer.from(data).toString("utf8"))
  } catch {
    // A part of a chunked window: the part that completes it is decoded whole by the service, not here.
    return []
  }
  if (payload.type === "lane_window") return (payload.events ?? []).map((e) => ({ seq, subject, type: e.type, row: e.row, attempt: e.attempt, lease: payload.lease!, ...stored }))
  return [{ seq, subject, type, payload, ...(payload.row === undefined ? {} : { row: payload.row, attempt: payload.attempt }), ...stored }]
}

/** One batch's history straight from the embedded log's file, bypassing the service's adapter. */
const fromSqlite = (dataDir: string, batchId: string): Array<StoredEvent> => {
  const db = new Database(join(dataDir, "log.sqlite"), { readonly: true })
  try {
    const rows = db
      .prepare("SELECT seq, subject, data FROM messages WHERE subject LIKE ? ORDER BY seq")
      .all(`batch.${batchId}.%`) as Array<{ seq: number; subject: string; data: Buffer }>
    return rows.flatMap((r) => decode(r.seq, r.subject, r.data))
  } finally {
    db.close()
  }
}

/** One batch's history from JetStream with an ordered consumer, bypassing the service's adapter. */
const fromJetStream = async (natsUrl: string, batchId: string): Promise<Array<StoredEvent>> => {
  const nc = await connect({ servers: natsUrl.split(","), timeout: 5_000 })
  try {
    const filter = `batch.${batchId}.>`
    // Up to the last message on the batch's subjects: 2.9.10's pending counts are not to be trusted.
    const last = (await (await jetstreamManager(nc)).streams.getMessage("SLUICE", { last_by_subj: filter }))?.seq ?? 0
    const events: Array<StoredEvent> = []
    if (last === 0) return events
    const consumer = await jetstream(nc).consumers.get("SLUICE", { filter_subjects: filter })
    const messages = await consumer.consume()
    for await (const m of messages) {
      events.push(...decode(m.seq, m.subject, m.data))
      if (m.seq >= last) break
    }
    return events
  } finally {
    await nc.close()
  }
}

export const storedEvents = (where: { dataDir: string; natsUrl?: string | undefined }, batchId: string) =>
  where.natsUrl === undefined ? Promise.resolve(fromSqlite(where.dataDir, batchId)) : fromJetStream(where.natsUrl, batchId)

/** The id of the batch or response (a one-row batch on `response.<id>.…`) a subject belongs to, if any. */
const aggregateOf = (subject: string): string | undefined => {
  const [root, id] = subject.split(".", 2)
  return (root === "batch" || root === "response") && id !== undefined ? id : undefined
}

/** A model's owner's lane window on a batch or response: the first one of an owner is its claim, after which the owner's actor queues the rows. */
export interface StoredLane {
  readonly model: string
  readonly owner: string
}

export interface StoredLog {
  /** Each batch's and response's events, by id. */
  readonly events: Map<string, Array<StoredEvent>>
  /** Each one's lane windows, by id: which models' owners have claimed it. */
  readonly lanes: Map<string, Array<StoredLane>>
}

const laneOf = (data: Uint8Array): StoredLane | undefined => {
  try {
    const payload = JSON.parse(Buffer.from(data).toString("utf8")) as { model?: unknown; owner?: unknown }
    return typeof payload.model === "string" && typeof payload.owner === "string" ? { model: payload.model, owner: payload.owner } : undefined
  } catch {
    // A part of a chunked window: the window's first part names it too.
    return undefined
  }
}

const byAggregate = (messages: Iterable<{ seq: number; subject: string; data: Uint8Array; time: number }>): StoredLog => {
  const events = new Map<string, Array<StoredEvent>>()
  const lanes = new Map<string, Array<StoredLane>>()
  for (const m of messages) {
    const id = aggregateOf(m.subject)
    if (id === undefined) continue
    let list = events.get(id)
    if (list === undefined) events.set(id, (list = []))
    list.push(...decode(m.seq, m.subject, m.data, m.time))
    if (m.subject.split(".", 4)[2] !== "lane") continue
    const lane = laneOf(m.data)
    if (lane !== undefined) lanes.set(id, [...(lanes.get(id) ?? []), lane])
  }
  return { events, lanes }
}

/**
 * Every batch's and response's history at once, by id: one read of the whole log, for tests that look
 * at many of them after every step.
 */
export const storedEventsByAggregate = async (where: { dataDir: string; natsUrl?: string | undefined }): Promise<Map<string, Array<StoredEvent>>> =>
  (await storedLogByAggregate(where)).events

/** The same read, with the lane windows that show which models' owners have claimed each batch and response. */
export const storedLogByAggregate = async (where: { dataDir: string; natsUrl?: string | undefined }): Promise<StoredLog> => {
  if (where.natsUrl === undefined) {
    const db = new Database(join(where.dataDir, "log.sqlite"), { readonly: true })
    try {
      const rows = db
        .prepare("SELECT seq, subject, data, time FROM messages WHERE subject LIKE 'batch.%' OR subject LIKE 'response.%' ORDER BY seq")
        .all() as Array<{ seq: number; subject: string; data: Buffer; time: number }>
      return byAggregate(rows)
    } finally {
      db.close()
    }
  }
  const nc = await connect({ servers: where.natsUrl.split(","), timeout: 5_000 })
  try {
    const last = (await (await jetstreamManager(nc)).streams.info("SLUICE")).state.last_seq
    const messages: Array<{ seq: number; subject: string; data: Uint8Array; time: number }> = []
    if (last > 0) {
      const consumer = await jetstream(nc).consumers.get("SLUICE")
      for await (const m of await consumer.consume()) {
        messages.push({ seq: m.seq, subject: m.subject, data: m.data, time: m.info.timestampNanos / 1e6 })
        if (m.seq >= last) break
      }
    }
    return byAggregate(messages)
  } finally {
    await nc.close()
  }
}

/**
 * The owner of the latest lane window on one model's lane of a batch or response, if the log holds one:
 * one cheap read, for a test that waits for a model's owner to claim the batch.
 */
export const storedLaneOwner = async (where: { dataDir: string; natsUrl?: string | undefined }, id: string, model: string): Promise<string | undefined> => {
  const subject = laneSubject(id, model)
  if (where.natsUrl === undefined) {
    const db = new Database(join(where.dataDir, "log.sqlite"), { readonly: true })
    try {
      const row = db.prepare("SELECT data FROM messages WHERE subject = ? ORDER BY seq DESC LIMIT 1").get(subject) as { data: Buffer } | undefined
      return row === undefined ? undefined : laneOf(row.data)?.owner
    } finally {
      db.close()
    }
  }
  const nc = await connect({ servers: where.natsUrl.split(","), timeout: 5_000 })
  try {
    const found = await (await jetstreamManager(nc)).streams.getMessage("SLUICE", { last_by_subj: subject }).catch(() => null)
    return found === null || found === undefined ? undefined : laneOf(found.data)?.owner
  } finally {
    await nc.close()
  }
}

export const terminalRowTypes: ReadonlySet<string> = new Set(["row_completed", "row_failed", "row_cancelled"])

/** How many terminal row events each row has in the log, by row index. */
export const terminalsPerRow = (events: ReadonlyArray<StoredEvent>, total: number): Array<number> => {
  const counts = Array.from({ length: total }, () => 0)
  for (const e of events) if (terminalRowTypes.has(e.type) && e.row !== undefined) counts[e.row]!++
  return counts
}

/**
 * The row events of one batch that settle an attempt (a terminal event, or a retry) the log holds no
 * start of before them, described: there should be none, whatever crashed, failed over or was cut off.
 * A model's actor decides a settle once its start is stored, and a new owner's claim settles only the
 * attempts the log shows started.
 */
export const settlesWithoutStart = (events: ReadonlyArray<Pick<StoredEvent, "seq" | "type" | "row" | "attempt">>): Array<string> => {
  const started = new Set<string>()
  const orphans: Array<string> = []
  for (const e of [...events].sort((a, b) => a.seq - b.seq)) {
    if (e.row === undefined || e.attempt === undefined) continue
    const key = `${e.row}:${e.attempt}`
    if (e.type === "row_started") started.add(key)
    else if ((terminalRowTypes.has(e.type) || e.type === "row_retrying") && !started.has(key)) orphans.push(`${e.type} of row ${e.row}, attempt ${e.attempt}, at seq ${e.seq}`)
  }
  return orphans
}
