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

/** A group of `row_bodies` events in one buffer: each event's bytes and the index of its first row. */
interface BodiesGroup {
  readonly bytes: Uint8Array
  readonly events: ReadonlyArray<{ readonly first: number; readonly start: number; readonly end: number }>
}

/** Each `row_bodies` event's rows, ids and models only, for the `rows_added` event that names it. */
interface RowsChunk {
  readonly first: number
  readonly rowsJson: string
}

/**
 * A batch's rows serialized before they are stored (`encodeRows`): plain data, so a worker thread can
 * make it and hand it over, the groups' buffers transferred. Its events name `batchId`.
 */
export interface EncodedRows {
  readonly batchId: string
  readonly groups: ReadonlyArray<BodiesGroup>
  readonly chunks: ReadonlyArray<RowsChunk>
}

/**
 * Serializes the rows' bodies group after group into one buffer, which the next group writes over, and
 * keeps each event's ids and models. Every request body is serialized once, straight into the bytes of
 * its event.
 */
const rowsEncoder = (batchId: string, input: ReadonlyArray<NewRow>, firstIndex: number) => {
  // Let go of once every body is serialized: the rows' objects need not outlive their bytes.
  let requests = input
  const chunks: Array<RowsChunk> = []
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
  /** The next group, about GROUP_BYTES of events, or undefined once all are out. */
  const nextGroup = (): BodiesGroup | undefined => {
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
    // Taken once the group is written: the buffer may have grown (moved) while it was.
    return { bytes: staging.subarray(0, used), events }
  }
  return { nextGroup, chunks }
}

/** The `row_bodies` events of a group, as the log appends them. */
const groupMessages = (batchId: string, group: BodiesGroup): Array<AppendInput> => {
  const subject = batchSubject(batchId, "row_bodies")
  return group.events.map(({ first, start, end }): AppendInput => ({
    subject,
    data: group.bytes.subarray(start, end),
    msgId: chunkMsgId(batchId, "row_bodies", first),
  }))
}

const encoder = new TextEncoder()

/** The `rows_added` event of each bodies chunk, once the log has said where the bodies are stored. */
const rowsAddedOf = (batchId: string, chunks: ReadonlyArray<RowsChunk>) => {
  const subject = batchSubject(batchId, "rows_added")
  return (stored: ReadonlyArray<AppendResult>) =>
    chunks.map(({ first, rowsJson }, i): AppendInput => {
      const at = stored[i]!
      const bodiesAt = `{"first_seq":${at.firstSeq ?? at.seq},"seq":${at.seq}}`
      return {
        subject,
        data: encoder.encode(`{"type":"rows_added","batch_id":"${batchId}","first":${first},"rows":${rowsJson},"bodies":${bodiesAt}}`),
        msgId: chunkMsgId(batchId, "rows_added", first),
      }
    })
}

/**
 * The input rows as events, in two steps: their bodies first, in `row_bodies` events, then the rows'
 * ids and models in `rows_added` events, each naming the log position of its chunk's bodies. The
 * projections decode only the second kind, a small fraction of a batch's bytes.
 */
export const rowsMessages = (batchId: string, input: ReadonlyArray<NewRow>, firstIndex = 0): RowsMessages => {
  const encoding = rowsEncoder(batchId, input, firstIndex)
  return {
    nextBodies: () => {
      const group = encoding.nextGroup()
      return group === undefined ? undefined : groupMessages(batchId, group)
    },
    rowsAdded: rowsAddedOf(batchId, encoding.chunks),
  }
}

/** The rows serialized whole, each group in a buffer of its own: what `encodedMessages` appends. */
export const encodeRows = (batchId: string, input: ReadonlyArray<NewRow>): EncodedRows => {
  const encoding = rowsEncoder(batchId, input, 0)
  const groups: Array<BodiesGroup> = []
  for (let group = encoding.nextGroup(); group !== undefined; group = encoding.nextGroup()) {
    groups.push({ bytes: new Uint8Array(group.bytes), events: group.events })
  }
  return { batchId, groups, chunks: encoding.chunks }
}

/** Rows serialized by `encodeRows` as the messages `rowsMessages` gives, with the same bytes. */
export const encodedMessages = (encoded: EncodedRows): RowsMessages => {
  let next = 0
  return {
    nextBodies: () => {
      const group = encoded.groups[next++]
      return group === undefined ? undefined : groupMessages(encoded.batchId, group)
    },
    rowsAdded: rowsAddedOf(encoded.batchId, encoded.chunks),
  }
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

/** Appends the rows' bodies, then answers their `rows_added` events, to be appended with the batch's. */
export const appendRowsMessages = (log: EventLogShape, messages: RowsMessages) =>
  Effect.map(appendBodies(log, messages), messages.rowsAdded)

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
        added.push(...(yield* appendRowsMessages(log, messages)))
      }),
    )
    return added
  })
