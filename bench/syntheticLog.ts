import { createHash } from "node:crypto"
import { Effect } from "effect"
import { appendBodies, rowsMessages } from "../src/actors/rowsAdded.js"
import { type AccountEvent, accountSubject } from "../src/domain/account/events.js"
import { type BatchEvent, onceOnlyTypes } from "../src/domain/batch/events.js"
import { batchMsgId, batchSubject } from "../src/domain/batch/subjects.js"
import type { AppendInput, EventLogShape, LogUnavailable, WrongLastSequence } from "../src/eventlog/EventLog.js"
import { MODELS } from "./processes.js"
import { smallRows } from "./rows.js"

const encoder = new TextEncoder()
const ACCOUNT = "bench"
const KEY = "key_bench"

// As BatchWriter and Accounts publish them: the subject, message id and once-only guard of each event.
const batchMessage = (event: BatchEvent): AppendInput => ({
  subject: batchSubject(event.batch_id, event.type),
  data: encoder.encode(JSON.stringify(event)),
  msgId: batchMsgId(event),
  ...(onceOnlyTypes.has(event.type) ? { expectLastSubjectSeq: 0 } : {}),
})
const accountMessage = (event: AccountEvent): AppendInput => ({
  subject: accountSubject(event.account_id, event.type),
  data: encoder.encode(JSON.stringify(event)),
})

/** A simulator answer as ModelActor stores it in row_completed. */
const response = (row: number, at: number) => ({
  status_code: 200,
  request_id: `req_${createHash("md5").update(`${at}:${row}`).digest("hex")}`,
  body: {
    id: `chatcmpl-sim-${row}`,
    object: "chat.completion",
    created: Math.floor(at / 1000),
    model: MODELS.fast,
    choices: [{ index: 0, message: { role: "assistant", content: `Simulated answer to: question ${row}`.slice(0, 32) }, logprobs: null, finish_reason: "length" }],
    usage: { prompt_tokens: 3, completion_tokens: 8, total_tokens: 11 },
  },
})

/**
 * The messages Sluice writes for one batch of `rows` small rows that runs to completion on `slots`
 * slots, after its row_bodies: rows_added chunks, batch_created, batch_started, row_started and row_completed per row
 * (interleaved as a full set of slots would), batch_completed.
 */
function* batchHistory(batchId: string, rowsAdded: ReadonlyArray<AppendInput>, rows: number, slots: number, t0: number): Generator<AppendInput> {
  yield* rowsAdded
  yield batchMessage({
    type: "batch_created",
    batch_id: batchId,
    account_id: ACCOUNT,
    key_id: KEY,
    created_at: t0,
    expires_at: t0 + 86_400_000,
    completion_window: "24h",
    metadata: null,
    total: rows,
    models: [MODELS.fast],
  })
  yield batchMessage({ type: "batch_started", batch_id: batchId, at: t0 })
  const started = (row: number) => batchMessage({ type: "row_started", batch_id: batchId, row, attempt: 1, at: t0 + row })
  for (let row = 0; row < Math.min(slots, rows); row++) yield started(row)
  for (let row = 0; row < rows; row++) {
    const at = t0 + row + slots
    yield batchMessage({ type: "row_completed", batch_id: batchId, row, attempt: 1, at, response: response(row, at), cost_usd: 0 })
    if (row + slots < rows) yield started(row + slots)
  }
  yield batchMessage({ type: "batch_completed", batch_id: batchId, at: t0 + rows + slots })
}

const SLICE = 4096

/**
 * Fills an empty log with one account and `batches` completed batches; answers the messages
 * appended. The batches are written side by side, as batches run at once, each in its own order.
 */
export const fillLog = (
  log: EventLogShape,
  batches: number,
  rowsPerBatch: number,
  slots: number,
): Effect.Effect<number, LogUnavailable | WrongLastSequence> =>
  Effect.gen(function* () {
    const t0 = Date.now()
    yield* log.append([
      accountMessage({ type: "account_created", account_id: ACCOUNT, tier: "internal", daily_quota_usd: null, concurrency: null, models: null, at: t0 }),
      accountMessage({ type: "key_created", account_id: ACCOUNT, key_id: KEY, key_sha256: "0".repeat(64), expires_at: null, at: t0 }),
    ])
    const counts = yield* Effect.forEach(
      Array.from({ length: batches }, (_, b) => b),
      (b) =>
        Effect.gen(function* () {
          const batchId = `batch_bench${String(b).padStart(27, "0")}`
          const rows = smallRows(rowsPerBatch, MODELS.fast).map((r) => ({ custom_id: r.custom_id, model: r.body.model, body: r.body }))
          // As BatchWriter.create writes them: the bodies first, then the rows naming where they are.
          const messages = rowsMessages(batchId, rows)
          const stored = yield* appendBodies(log, messages)
          let appended = stored.length
          let pending: Array<AppendInput> = []
          for (const message of batchHistory(batchId, messages.rowsAdded(stored), rowsPerBatch, slots, t0 + b * 3_600_000)) {
            pending.push(message)
            if (pending.length >= SLICE) {
              appended += (yield* log.append(pending)).length
              pending = []
            }
          }
          return appended + (yield* log.append(pending)).length
        }),
      { concurrency: "unbounded" },
    )
    return 2 + counts.reduce((a, b) => a + b, 0)
  })
