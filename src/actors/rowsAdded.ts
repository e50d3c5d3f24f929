import { Effect, Stream } from "effect"
import { batchSubject, chunkMsgId } from "../domain/batch/subjects.js"
import type { AppendInput, AppendResult, EventLogShape, LogUnavailable } from "../eventlog/EventLog.js"
import { appendSettled } from "./unknownOutcome.js"

/** Bodies per event, about: small enough that an event seldom needs the log's multi-part messages. */
const CHUNK_BYTES = 256 * 1024
/** The bodies go to the log a few MiB at a time, from one buffer: a create holds no copy of all of them. */
const GROUP_BYTES = 4 * 1024 * 1024

export interface NewRow {
  readonly custom_id: string
  readonly model: string
  readonly body: unknown
}

export interface RowsMessages {
  /**
   * The next `row_bodies` events, every request body serialized once, straight into the bytes of its
   * event: about GROUP_BYTES of them, or undefined once all are out. Their data lives in a buffer the
   * next call writes over, so each group must be appended, successfully, before the next is asked for.
   */
  readonly nextBodies: () => Array<AppendInput> | undefined
  /** The `rows_added` event of each bodies chunk, once the log has said where the bodies are stored. */
  readonly rowsAdded: (stored: ReadonlyArray<AppendResult>) => Array<AppendInput>
}

/**
 * The input rows as events, in two steps: their bodies first, in `row_bodies` events, then the rows'
 * ids and models in `rows_added` events, each naming the log position of its chunk's bodies. The
 * projections decode only the second kind, a small fraction of a batch's bytes.
 */
export const rowsMessages = (batchId: string, input: ReadonlyArray<NewRow>, firstIndex = 0): RowsMessages => {
  // Let go of once every body is serialized: the rows' objects need not outlive their bytes.
  let requests = input
  const chunks: Array<{ readonly first: number; readonly rowsJson: string }> = []
  const bodiesSubject = batchSubject(batchId, "row_bodies")
  let staging = Buffer.allocUnsafe(GROUP_BYTES + CHUNK_BYTES)
  let used = 0
  let next = 0
  const put = (text: string) => {
    const room = used + text.length * 3
    if (room > staging.length) {
      const grown = Buffer.allocUnsafe(Math.max(room, staging.length * 2))
      staging.copy(grown, 0, 0, used)
      staging = grown
    }
    used += staging.write(text, used, "utf8")
  }
  // Rows per event, from the size of the bodies so far: one JSON.stringify per event, not one per body,
  // which made serializing a large batch markedly slower.
  let perEvent = 16
  /** One event's bytes from `next` on, about CHUNK_BYTES of bodies, at the end of the buffer. */
  const putEvent = () => {
    const rows = requests.slice(next, next + perEvent)
    const first = firstIndex + next
    next += rows.length
    put(`{"type":"row_bodies","batch_id":"${batchId}","first":${first},"bodies":`)
    const bodiesJson = JSON.stringify(rows.map((r) => r.body))
    put(bodiesJson)
    put("}")
    perEvent = Math.max(1, Math.min(4096, Math.round((perEvent * CHUNK_BYTES) / Math.max(1, bodiesJson.length))))
    chunks.push({ first, rowsJson: JSON.stringify(rows.map((r) => ({ custom_id: r.custom_id, model: r.model }))) })
    return first
  }
  const nextBodies = () => {
    if (next >= requests.length) {
      requests = []
      staging = Buffer.alloc(0)
      return undefined
    }
    used = 0
    const events: Array<{ readonly first: number; readonly start: number; readonly end: number }> = []
    while (next < requests.length && used < GROUP_BYTES) {
      const start = used
      const first = putEvent()
      events.push({ first, start, end: used })
    }
    // Views taken once the group is written: the buffer may have grown (moved) while it was.
    return events.map(({ first, start, end }): AppendInput => ({
      subject: bodiesSubject,
      data: staging.subarray(start, end),
      msgId: chunkMsgId(batchId, "row_bodies", first),
    }))
  }

  const rowsSubject = batchSubject(batchId, "rows_added")
  const encoder = new TextEncoder()
  const rowsAdded = (stored: ReadonlyArray<AppendResult>) =>
    chunks.map(({ first, rowsJson }, i): AppendInput => {
      const at = stored[i]!
      const bodiesAt = `{"first_seq":${at.firstSeq ?? at.seq},"seq":${at.seq}}`
      return {
        subject: rowsSubject,
        data: encoder.encode(`{"type":"rows_added","batch_id":"${batchId}","first":${first},"rows":${rowsJson},"bodies":${bodiesAt}}`),
        msgId: chunkMsgId(batchId, "rows_added", first),
      }
    })
  return { nextBodies, rowsAdded }
}

/** Appends the bodies group after group, each stored before the next overwrites its buffer; answers where each event is. */
export const appendBodies = (log: EventLogShape, messages: RowsMessages) =>
  Effect.gen(function* () {
    const stored: Array<AppendResult> = []
    for (let group = messages.nextBodies(); group !== undefined; group = messages.nextBodies()) {
      stored.push(...(yield* appendSettled(log, group)))
    }
    return stored
  })

/**
 * Rows that arrive in groups (read from an uploaded file a few MiB at a time) go to the log as they
 * come, each group's bodies stored before the next is read, so a create from a 200 MB file never holds
 * more than a group. Answers the `rows_added` events of every group, to be appended with the batch's.
 */
export const appendRowGroups = (log: EventLogShape, batchId: string, groups: Stream.Stream<ReadonlyArray<NewRow>, LogUnavailable>) =>
  Effect.gen(function* () {
    const added: Array<AppendInput> = []
    let next = 0
    yield* Stream.runForEach(groups, (rows) =>
      Effect.gen(function* () {
        const messages = rowsMessages(batchId, rows, next)
        next += rows.length
        added.push(...messages.rowsAdded(yield* appendBodies(log, messages)))
      }),
    )
    return added
  })
