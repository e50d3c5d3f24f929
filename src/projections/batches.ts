import type Database from "better-sqlite3"
import type { BatchEvent } from "../domain/batch/events.js"

const secs = (ms: number) => Math.floor(ms / 1000)
const open = `status IN ('validating', 'in_progress')`

/** Batch objects and their counters, one row per batch. */
export const batchesProjection = (db: Database.Database) => {
  const s = {
    created: db.prepare(
      `INSERT OR IGNORE INTO batches (id, account_id, key_id, seq, status, completion_window, created_at, expires_at, total, metadata, models)
       VALUES (?, ?, ?, ?, 'validating', ?, ?, ?, ?, ?, ?)`,
    ),
    started: db.prepare(`UPDATE batches SET status = 'in_progress', in_progress_at = ? WHERE id = ? AND status = 'validating'`),
    rowStarted: db.prepare(`UPDATE batches SET running = running + 1 WHERE id = ?`),
    rowRetrying: db.prepare(`UPDATE batches SET running = running - 1 WHERE id = ?`),
    rowCompleted: db.prepare(
      `UPDATE batches SET running = running - 1, completed = completed + 1, cost_usd = cost_usd + ? WHERE id = ?`,
    ),
    rowFailed: db.prepare(`UPDATE batches SET running = running - 1, failed = failed + 1 WHERE id = ?`),
    rowCancelled: db.prepare(`UPDATE batches SET running = running - 1, cancelled = cancelled + 1 WHERE id = ?`),
    cancelling: db.prepare(
      `UPDATE batches SET status = 'cancelling', cancelling_at = ?, cancelled = cancelled + ? WHERE id = ? AND ${open}`,
    ),
    failed: db.prepare(
      `UPDATE batches SET status = 'failed', failed_at = ?, error = ?, failed = failed + ? WHERE id = ? AND ${open}`,
    ),
    expired: db.prepare(
      `UPDATE batches SET status = 'expired', expired_at = ?, failed = failed + ? WHERE id = ? AND ${open}`,
    ),
    cancelled: db.prepare(`UPDATE batches SET status = 'cancelled', cancelled_at = ? WHERE id = ? AND status = 'cancelling'`),
    completed: db.prepare(`UPDATE batches SET status = 'completed', completed_at = ? WHERE id = ? AND ${open}`),
    deleted: db.prepare(`DELETE FROM batches WHERE id = ?`),
  }
  /** Answers whether a closing event took effect, so the row projections settle idle rows only then. */
  return (event: BatchEvent, seq: number): boolean => {
    switch (event.type) {
      case "batch_created":
        s.created.run(
          event.batch_id,
          event.account_id,
          event.key_id,
          seq,
          event.completion_window,
          secs(event.created_at),
          secs(event.expires_at),
          event.total,
          event.metadata === null ? null : JSON.stringify(event.metadata),
          JSON.stringify(event.models),
        )
        return true
      case "rows_added":
        return true
      case "batch_started":
        return s.started.run(secs(event.at), event.batch_id).changes > 0
      case "row_started":
        return s.rowStarted.run(event.batch_id).changes > 0
      case "row_retrying":
        return s.rowRetrying.run(event.batch_id).changes > 0
      case "row_completed":
        return s.rowCompleted.run(event.cost_usd, event.batch_id).changes > 0
      case "row_failed":
        return s.rowFailed.run(event.batch_id).changes > 0
      case "row_cancelled":
        return s.rowCancelled.run(event.batch_id).changes > 0
      case "batch_cancelling":
        return s.cancelling.run(secs(event.at), event.cancelled_rows, event.batch_id).changes > 0
      case "batch_failed":
        return s.failed.run(secs(event.at), JSON.stringify(event.error), event.failed_rows, event.batch_id).changes > 0
      case "batch_expired":
        return s.expired.run(secs(event.at), event.expired_rows, event.batch_id).changes > 0
      case "batch_cancelled":
        return s.cancelled.run(secs(event.at), event.batch_id).changes > 0
      case "batch_completed":
        return s.completed.run(secs(event.at), event.batch_id).changes > 0
      case "batch_deleted":
        return s.deleted.run(event.batch_id).changes > 0
    }
  }
}
