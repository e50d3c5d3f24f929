import { batchSubject } from "../domain/batch/subjects.js"
import type { AppendInput } from "../eventlog/EventLog.js"

/** Small enough that a chunk never needs the log's multi-part messages unless one row alone is large. */
const CHUNK_BYTES = 256 * 1024

/**
 * The input rows as `rows_added` events. Each row is serialized once, straight into the bytes of its
 * event: a 32 MiB batch is neither stringified twice nor joined into one large string per chunk.
 */
export const rowsAddedMessages = (
  batchId: string,
  requests: ReadonlyArray<{ readonly custom_id: string; readonly model: string; readonly body: unknown }>,
): Array<AppendInput> => {
  const messages: Array<AppendInput> = []
  const subject = batchSubject(batchId, "rows_added")
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
  const start = () => put(`{"type":"rows_added","batch_id":"${batchId}","first":${first},"rows":[`)
  const flush = () => {
    if (count === 0) return
    put("]}")
    const data = new Uint8Array(used)
    data.set(staging.subarray(0, used))
    messages.push({ subject, data, msgId: `${batchId}:rows:${first}` })
    first += count
    count = 0
    chars = 0
    used = 0
  }
  for (const r of requests) {
    const row = JSON.stringify({ custom_id: r.custom_id, model: r.model, body: r.body })
    if (chars + row.length > CHUNK_BYTES) flush()
    if (count === 0) start()
    else put(",")
    put(row)
    count++
    chars += row.length
  }
  flush()
  return messages
}
