import { batchSubject } from "../domain/batch/subjects.js"
import type { AppendInput } from "../eventlog/EventLog.js"

/** Small enough that a chunk never needs the log's multi-part messages unless one row alone is large. */
const CHUNK_BYTES = 256 * 1024
const encoder = new TextEncoder()

/**
 * The input rows as `rows_added` events. Each row is serialized once and the event JSON is
 * assembled around the serialized rows: a 32 MiB batch is not stringified twice.
 */
export const rowsAddedMessages = (
  batchId: string,
  requests: ReadonlyArray<{ readonly custom_id: string; readonly model: string; readonly body: unknown }>,
): Array<AppendInput> => {
  const messages: Array<AppendInput> = []
  let first = 0
  let pending: Array<string> = []
  let bytes = 0
  const flush = () => {
    if (pending.length === 0) return
    const json = `{"type":"rows_added","batch_id":"${batchId}","first":${first},"rows":[${pending.join(",")}]}`
    messages.push({ subject: batchSubject(batchId, "rows_added"), data: encoder.encode(json), msgId: `${batchId}:rows:${first}` })
    first += pending.length
    pending = []
    bytes = 0
  }
  for (const r of requests) {
    const row = JSON.stringify({ custom_id: r.custom_id, model: r.model, body: r.body })
    if (bytes + row.length > CHUNK_BYTES) flush()
    pending.push(row)
    bytes += row.length
  }
  flush()
  return messages
}
