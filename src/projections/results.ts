import type Database from "better-sqlite3"
import type { BatchEvent } from "../domain/batch/events.js"
import type { LogMessage } from "../eventlog/EventLog.js"

const batchFailedError = JSON.stringify({ code: "batch_failed", message: "Not run: the batch failed" })
const batchExpiredError = JSON.stringify({
  code: "batch_expired",
  message: "Not run: the completion window closed first",
})

const ROWS_PER_INSERT = 64

/**
 * One result line per submitted row, in submission order, plus where each chunk of rows has its request
 * bodies in the log (its `row_bodies` event, or the `rows_added` event itself before those existed):
 * the dispatcher reads them from there, so they are stored once, in the log.
 */
export const resultsProjection = (db: Database.Database) => {
  const s = {
    chunk: db.prepare(`INSERT OR IGNORE INTO row_chunks (batch_id, first, type, first_seq, seq) VALUES (?, ?, ?, ?, ?)`),
    row: db.prepare(
      `INSERT OR IGNORE INTO results (batch_id, idx, custom_id, model, status) VALUES (?, ?, ?, ?, 'queued')`,
    ),
    rows: db.prepare(
      `INSERT OR IGNORE INTO results (batch_id, idx, custom_id, model, status) VALUES ${Array(ROWS_PER_INSERT).fill("(?, ?, ?, ?, 'queued')").join(", ")}`,
    ),
    // Each row event applies only from the phase it leaves, so a duplicate (a publish retried after
    // JetStream's de-duplication window) changes nothing, and the batch counters follow suit.
    started: db.prepare(
      `UPDATE results SET status = 'running', attempts = ? WHERE batch_id = ? AND idx = ? AND status = 'queued' AND attempts < ?`,
    ),
    retrying: db.prepare(
      `UPDATE results SET status = 'queued', error = ? WHERE batch_id = ? AND idx = ? AND status = 'running' AND attempts = ?`,
    ),
    completed: db.prepare(
      `UPDATE results SET status = 'completed', response = ?, error = NULL WHERE batch_id = ? AND idx = ? AND status = 'running' AND attempts = ?`,
    ),
    failed: db.prepare(
      `UPDATE results SET status = 'failed', error = ? WHERE batch_id = ? AND idx = ? AND status = 'running' AND attempts = ?`,
    ),
    cancelledRow: db.prepare(
      `UPDATE results SET status = 'cancelled', error = ? WHERE batch_id = ? AND idx = ? AND status = 'running' AND attempts = ?`,
    ),
    cancelIdle: db.prepare(`UPDATE results SET status = 'cancelled', error = NULL WHERE batch_id = ? AND status = 'queued'`),
    failIdle: db.prepare(`UPDATE results SET status = 'failed', error = ? WHERE batch_id = ? AND status = 'queued'`),
    expireIdle: db.prepare(`UPDATE results SET status = 'expired', error = ? WHERE batch_id = ? AND status = 'queued'`),
    deleteResults: db.prepare(`DELETE FROM results WHERE batch_id = ?`),
    deleteChunks: db.prepare(`DELETE FROM row_chunks WHERE batch_id = ?`),
  }
  /** Answers whether the event changed a row: the batch's counters move only when it did. */
  return (event: BatchEvent, tookEffect: boolean, stored: Pick<LogMessage, "seq" | "firstSeq">): boolean => {
    switch (event.type) {
      case "rows_added": {
        // Many rows per statement: a call into SQLite costs more than the row it inserts.
        const { rows, first, batch_id } = event
        let i = 0
        for (; i + ROWS_PER_INSERT <= rows.length; i += ROWS_PER_INSERT) {
          const rowValues: Array<unknown> = []
          for (let k = i; k < i + ROWS_PER_INSERT; k++) {
            const row = rows[k]!
            rowValues.push(batch_id, first + k, row.custom_id, row.model)
          }
          s.rows.run(rowValues)
        }
        for (; i < rows.length; i++) {
          const row = rows[i]!
          s.row.run(batch_id, first + i, row.custom_id, row.model)
        }
        if (event.bodies === undefined) s.chunk.run(batch_id, first, "rows_added", stored.firstSeq ?? stored.seq, stored.seq)
        else s.chunk.run(batch_id, first, "row_bodies", event.bodies.first_seq, event.bodies.seq)
        return true
      }
      case "row_started":
        return s.started.run(event.attempt, event.batch_id, event.row, event.attempt).changes > 0
      case "row_retrying":
        return s.retrying.run(JSON.stringify(event.error), event.batch_id, event.row, event.attempt).changes > 0
      case "row_completed":
        return s.completed.run(JSON.stringify(event.response), event.batch_id, event.row, event.attempt).changes > 0
      case "row_failed":
        return s.failed.run(JSON.stringify(event.error), event.batch_id, event.row, event.attempt).changes > 0
      case "row_cancelled":
        return (
          s.cancelledRow.run(event.error === null ? null : JSON.stringify(event.error), event.batch_id, event.row, event.attempt)
            .changes > 0
        )
      case "batch_cancelling":
        if (tookEffect) s.cancelIdle.run(event.batch_id)
        return tookEffect
      case "batch_failed":
        if (tookEffect) s.failIdle.run(batchFailedError, event.batch_id)
        return tookEffect
      case "batch_expired":
        if (tookEffect) s.expireIdle.run(batchExpiredError, event.batch_id)
        return tookEffect
      case "batch_deleted":
        s.deleteResults.run(event.batch_id)
        s.deleteChunks.run(event.batch_id)
        return true
      default:
        return tookEffect
    }
  }
}
