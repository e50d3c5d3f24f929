import { batchSubject } from "../domain/batch/subjects.js"
import type { AppendInput, AppendResult } from "../eventlog/EventLog.js"

/** Small enough that a chunk never needs the log's multi-part messages unless one row alone is large. */
const CHUNK_BYTES = 256 * 1024

export interface NewRow {
  readonly custom_id: string
  readonly model: string
  readonly body: unknown
}

export interface RowsMessages {
  /** The `row_bodies` events: every request body, serialized once, straight into the bytes of its event. */
  readonly bodies: Array<AppendInput>
  /** The `rows_added` event of each bodies chunk, once the log has said where the bodies are stored. */
  readonly rowsAdded: (stored: ReadonlyArray<AppendResult>) => Array<AppendInput>
}

/**
 * The input rows as events, in two appends: their bodies first, in `row_bodies` events, then the rows'
 * ids and models in `rows_added` events, each naming the log position of its chunk's bodies. The
 * projections decode only the second kind, a small fraction of a batch's bytes. What `rowsAdded` needs
 * is taken out of the requests here, so the caller can let go of them before anything is appended.
 */
export const rowsMessages = (batchId: string, requests: ReadonlyArray<NewRow>): RowsMessages => {
  const bodies: Array<AppendInput> = []
  const chunks: Array<{ readonly first: number; readonly rowsJson: string }> = []
  const bodiesSubject = batchSubject(batchId, "row_bodies")
  // One staging buffer, grown as needed; each event's bytes are copied out of it once, at their size.
  let staging = Buffer.allocUnsafe(CHUNK_BYTES * 2)
  let used = 0
  let first = 0
  let count = 0
  let chars = 0
  const put = (text: string) => {
    const room = used + text.length * 3
    if (room > staging.length) {
      const grown = Buffer.allocUnsafe(Math.max(room, staging.length * 2))
      staging.copy(grown, 0, 0, used)
      staging = grown
    }
    used += staging.write(text, used, "utf8")
  }
  const start = () => put(`{"type":"row_bodies","batch_id":"${batchId}","first":${first},"bodies":[`)
  const flush = () => {
    if (count === 0) return
    put("]}")
    const data = new Uint8Array(used)
    data.set(staging.subarray(0, used))
    bodies.push({ subject: bodiesSubject, data, msgId: `${batchId}:bodies:${first}` })
    const ids = requests.slice(first, first + count).map((r) => ({ custom_id: r.custom_id, model: r.model }))
    chunks.push({ first, rowsJson: JSON.stringify(ids) })
    first += count
    count = 0
    chars = 0
    used = 0
  }
  for (const r of requests) {
    const body = JSON.stringify(r.body)
    if (chars + body.length > CHUNK_BYTES) flush()
    if (count === 0) start()
    else put(",")
    put(body)
    count++
    chars += body.length
  }
  flush()

  const rowsSubject = batchSubject(batchId, "rows_added")
  const encoder = new TextEncoder()
  const rowsAdded = (stored: ReadonlyArray<AppendResult>) =>
    chunks.map(({ first, rowsJson }, i): AppendInput => {
      const at = stored[i]!
      const bodiesAt = `{"first_seq":${at.firstSeq ?? at.seq},"seq":${at.seq}}`
      return {
        subject: rowsSubject,
        data: encoder.encode(`{"type":"rows_added","batch_id":"${batchId}","first":${first},"rows":${rowsJson},"bodies":${bodiesAt}}`),
        msgId: `${batchId}:rows:${first}`,
      }
    })
  return { bodies, rowsAdded }
}
