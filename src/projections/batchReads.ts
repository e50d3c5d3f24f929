import type Database from "better-sqlite3"
import { isResponseId } from "../domain/batch/subjects.js"
import type { BatchObject } from "../domain/api/BatchObject.js"
import type { WaitingOn } from "../domain/waiting/waitingOn.js"
import { type BatchStatus, UnfinishedBatchStatuses } from "../domain/api/BatchStatus.js"
import { batchUsage, type TokenTotals } from "../domain/batch/tokenTotals.js"
import { statusIn } from "./statusSql.js"
import { batchRowCache } from "./batchRowCache.js"
import { type BatchEndpoint, CHAT_ENDPOINT } from "../domain/batch/endpoint.js"
import { batchFiles } from "../domain/file/batchFiles.js"
import { DEFAULT_PRIORITY, type Priority } from "../domain/scheduling/priority.js"

export interface BatchRow extends TokenTotals {
  readonly id: string
  readonly account_id: string
  readonly key_id: string
  readonly seq: number
  readonly status: BatchStatus
  readonly completion_window: string
  readonly created_at: number
  readonly in_progress_at: number | null
  readonly expires_at: number
  readonly completed_at: number | null
  readonly failed_at: number | null
  readonly expired_at: number | null
  readonly cancelling_at: number | null
  readonly cancelled_at: number | null
  readonly total: number
  readonly completed: number
  readonly failed: number
  readonly cancelled: number
  readonly running: number
  readonly cost_usd: number
  readonly metadata: string | null
  readonly error: string | null
  readonly models: string
  /** How the batch stopped starting rows, while it waits for its running rows or once final. */
  readonly closing: "cancelled" | "failed" | "expired" | null
  readonly closing_error: string | null
  readonly final_written: string | null
  readonly created_ms: number
  readonly rerun_of: string | null
  /** Null for chat completions. */
  readonly endpoint: BatchEndpoint | null
  readonly input_file_id: string | null
  /** Null for standard: every batch stored before priorities existed. */
  readonly priority: Priority | null
  /** Rows asleep until their retry; `moved_ms`, when a row last started or settled (null before any did). */
  readonly retrying: number
  readonly moved_ms: number | null
}

/** The batch object exactly as the API shows it: an inline batch's file fields and `errors` are always null. */
export const toBatchObject = (
  row: BatchRow,
  eta: { readonly rows_ahead: number | null; readonly estimated_completion_at: number | null } = { rows_ahead: null, estimated_completion_at: null },
  waitingOn: WaitingOn | null = null,
): BatchObject => ({
  id: row.id,
  object: "batch",
  endpoint: row.endpoint ?? CHAT_ENDPOINT,
  errors: null,
  input_file_id: row.input_file_id,
  completion_window: row.completion_window,
  status: row.status,
  ...batchFiles(row),
  created_at: row.created_at,
  in_progress_at: row.in_progress_at,
  expires_at: row.expires_at,
  finalizing_at: null,
  completed_at: row.completed_at,
  failed_at: row.failed_at,
  expired_at: row.expired_at,
  cancelling_at: row.cancelling_at,
  cancelled_at: row.cancelled_at,
  request_counts: { total: row.total, completed: row.completed, failed: row.failed },
  metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, string>),
  // Summing float costs row by row leaves binary noise; the API shows micro-dollars.
  cost_usd: Math.round(row.cost_usd * 1e6) / 1e6,
  error: row.error === null ? null : (JSON.parse(row.error) as { code: string; message: string }),
  rerun_of: row.rerun_of,
  priority: row.priority ?? DEFAULT_PRIORITY,
  rows_ahead: eta.rows_ahead,
  estimated_completion_at: eta.estimated_completion_at,
  usage: batchUsage(row),
  waiting_on: waitingOn,
})

/** What a batch's timers go by: its completion window while unfinished, its finishing time (seconds) once final. */
export interface BatchDeadlines {
  readonly id: string
  readonly status: BatchStatus
  readonly expires_at: number
  readonly finished_at: number | null
}

const deadlineColumns = `id, status, expires_at, coalesce(completed_at, failed_at, expired_at, cancelled_at) AS finished_at`

/** The batches a caller sees as batches: not the responses run as one-row batches (src/domain/response). */
const batchesOnly = `id NOT LIKE 'resp\\_%' ESCAPE '\\'`

export const batchReads = (db: Database.Database) => {
  const s = {
    one: db.prepare(`SELECT * FROM batches WHERE id = ?`),
    // Their ids only: the rows come through the cache, which a polled list finds mostly there.
    firstPage: db.prepare(`SELECT id FROM batches WHERE account_id = ? AND ${batchesOnly} ORDER BY seq DESC LIMIT ?`).pluck(),
    nextPage: db.prepare(`SELECT id FROM batches WHERE account_id = ? AND seq < ? AND ${batchesOnly} ORDER BY seq DESC LIMIT ?`).pluck(),
    unfinished: db.prepare(`SELECT * FROM batches WHERE ${statusIn(UnfinishedBatchStatuses)} ORDER BY seq`),
    settledNotFinal: db.prepare(
      `SELECT id, models FROM batches WHERE ${statusIn(UnfinishedBatchStatuses)} AND running = 0 AND total - completed - failed - cancelled = 0`,
    ),
    unfinishedOf: db.prepare(
      `SELECT count(*) AS n FROM batches WHERE account_id = ? AND ${statusIn(UnfinishedBatchStatuses)} AND ${batchesOnly}`,
    ),
    unfinishedRowsOf: db.prepare(`SELECT * FROM batches WHERE account_id = ? AND ${statusIn(UnfinishedBatchStatuses)} AND ${batchesOnly}`),
    deadlines: db.prepare(`SELECT ${deadlineColumns} FROM batches`),
    // The partial index's first entry for the batch: no walk over its rows.
    nextRetry: db.prepare(`SELECT min(retry_at) AS at FROM results WHERE batch_id = ? AND retry_at IS NOT NULL`),
    openBatches: db.prepare(`SELECT * FROM batches WHERE ${statusIn(UnfinishedBatchStatuses)} AND closing IS NULL AND ${batchesOnly}`),
    deadlinesOf: db.prepare(`SELECT ${deadlineColumns} FROM batches WHERE id = ?`),
  }
  const cache = batchRowCache(db)
  const one = (id: string): BatchRow | undefined => {
    const kept = cache.get(id)
    if (kept !== undefined) return kept
    const row = s.one.get(id) as BatchRow | undefined
    return row === undefined ? undefined : cache.keep(row)
  }
  return {
    one,
    /** Another account's batch reads exactly like one that does not exist, and so does a response. */
    ofAccount: (accountId: string, id: string) => {
      const row = one(id)
      return row !== undefined && row.account_id === accountId && !isResponseId(id) ? row : undefined
    },
    /** Newest first; `afterSeq` is the position of the previous page's last batch. */
    page: (accountId: string, limit: number, afterSeq: number | undefined) =>
      ((afterSeq === undefined ? s.firstPage.all(accountId, limit + 1) : s.nextPage.all(accountId, afterSeq, limit + 1)) as Array<string>).map(
        (id) => one(id)!,
      ),
    unfinished: () => s.unfinished.all() as Array<BatchRow>,
    /** Unfinished batches none of whose rows runs or waits: their final event is due. */
    settledNotFinal: () => s.settledNotFinal.all() as Array<Pick<BatchRow, "id" | "models">>,
    unfinishedCount: (accountId: string) => (s.unfinishedOf.get(accountId) as { n: number }).n,
    unfinishedOf: (accountId: string) => s.unfinishedRowsOf.all(accountId) as Array<BatchRow>,
    deadlines: () => s.deadlines.all() as Array<BatchDeadlines>,
    deadlinesOf: (id: string) => s.deadlinesOf.get(id) as BatchDeadlines | undefined,
    /** Unix ms of the earliest retry among the batch's rows asleep until one. */
    nextRetryAt: (id: string) => (s.nextRetry.get(id) as { at: number | null }).at ?? undefined,
    /** Unfinished batches (not responses) still starting rows: at most the unfinished limit per account. */
    openBatches: () => s.openBatches.all() as Array<BatchRow>,
  }
}
export type BatchReads = ReturnType<typeof batchReads>
