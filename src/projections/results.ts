import type Database from "better-sqlite3"
import type { BatchEvent } from "../domain/batch/events.js"

const batchFailedError = JSON.stringify({ code: "batch_failed", message: "Not run: the batch failed" })
const batchExpiredError = JSON.stringify({
  code: "batch_expired",
  message: "Not run: the completion window closed first",
})

/** One result line per submitted row, in submission order, plus the row's request body for the dispatcher. */
export const resultsProjection = (db: Database.Database) => {
  const s = {
    input: db.prepare(`INSERT OR IGNORE INTO inputs (batch_id, idx, body) VALUES (?, ?, ?)`),
    row: db.prepare(
      `INSERT OR IGNORE INTO results (batch_id, idx, custom_id, model, status) VALUES (?, ?, ?, ?, 'queued')`,
    ),
    started: db.prepare(`UPDATE results SET status = 'running', attempts = ? WHERE batch_id = ? AND idx = ?`),
    retrying: db.prepare(`UPDATE results SET status = 'queued', error = ? WHERE batch_id = ? AND idx = ?`),
    completed: db.prepare(
      `UPDATE results SET status = 'completed', response = ?, error = NULL WHERE batch_id = ? AND idx = ?`,
    ),
    failed: db.prepare(`UPDATE results SET status = 'failed', error = ? WHERE batch_id = ? AND idx = ?`),
    cancelledRow: db.prepare(`UPDATE results SET status = 'cancelled', error = ? WHERE batch_id = ? AND idx = ?`),
    cancelIdle: db.prepare(`UPDATE results SET status = 'cancelled', error = NULL WHERE batch_id = ? AND status = 'queued'`),
    failIdle: db.prepare(`UPDATE results SET status = 'failed', error = ? WHERE batch_id = ? AND status = 'queued'`),
    expireIdle: db.prepare(`UPDATE results SET status = 'expired', error = ? WHERE batch_id = ? AND status = 'queued'`),
    deleteResults: db.prepare(`DELETE FROM results WHERE batch_id = ?`),
    deleteInputs: db.prepare(`DELETE FROM inputs WHERE batch_id = ?`),
  }
  return (event: BatchEvent, tookEffect: boolean): void => {
    switch (event.type) {
      case "rows_added":
        event.rows.forEach((row, i) => {
          s.row.run(event.batch_id, event.first + i, row.custom_id, row.model)
          s.input.run(event.batch_id, event.first + i, JSON.stringify(row.body))
        })
        return
      case "row_started":
        s.started.run(event.attempt, event.batch_id, event.row)
        return
      case "row_retrying":
        s.retrying.run(JSON.stringify(event.error), event.batch_id, event.row)
        return
      case "row_completed":
        s.completed.run(JSON.stringify(event.response), event.batch_id, event.row)
        return
      case "row_failed":
        s.failed.run(JSON.stringify(event.error), event.batch_id, event.row)
        return
      case "row_cancelled":
        s.cancelledRow.run(event.error === null ? null : JSON.stringify(event.error), event.batch_id, event.row)
        return
      case "batch_cancelling":
        if (tookEffect) s.cancelIdle.run(event.batch_id)
        return
      case "batch_failed":
        if (tookEffect) s.failIdle.run(batchFailedError, event.batch_id)
        return
      case "batch_expired":
        if (tookEffect) s.expireIdle.run(batchExpiredError, event.batch_id)
        return
      case "batch_deleted":
        s.deleteResults.run(event.batch_id)
        s.deleteInputs.run(event.batch_id)
        return
      default:
        return
    }
  }
}
