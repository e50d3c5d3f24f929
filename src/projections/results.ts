import type Database from "better-sqlite3"
import type { BatchEvent, RowEvent } from "../domain/batch/events.js"
import type { RowEffect } from "../domain/batch/rowEffect.js"
import type { LogMessage } from "../eventlog/EventLog.js"

const batchFailedError = JSON.stringify({ code: "batch_failed", message: "Not run: the batch failed" })
const batchExpiredError = JSON.stringify({
  code: "batch_expired",
  message: "Not run: the completion window closed first",
})

const ROWS_PER_INSERT = 64

/** What a row event changed of its row: a settle names the row's `custom_id` (null without one), which its completion event carries. */
export interface RowChange {
  readonly customId: string | null
}
const UNSETTLED: RowChange = { customId: null }

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
    // Each row effect applies only from the phase its event leaves, so a duplicate (a publish retried
    // after JetStream's de-duplication window) changes nothing, and the batch counters follow suit.
    started: db.prepare(
      `UPDATE results SET status = 'running', attempts = ? WHERE batch_id = ? AND idx = ? AND status = 'queued' AND attempts < ?`,
    ),
    // Only a retry's start has a retry time to clear: a first start leaves the index alone.
    retryStarted: db.prepare(
      `UPDATE results SET status = 'running', attempts = ?, retry_at = NULL WHERE batch_id = ? AND idx = ? AND status = 'queued' AND attempts < ?`,
    ),
    retrying: db.prepare(
      `UPDATE results SET status = 'queued', error = ?, retry_at = ? WHERE batch_id = ? AND idx = ? AND status = 'running' AND attempts = ?`,
    ),
    // A settle answers the row's custom_id, which its completion event carries.
    completed: db.prepare<unknown[], RowChange>(
      `UPDATE results SET status = 'completed', response = ?, error = NULL, settled_ms = ? WHERE batch_id = ? AND idx = ? AND status = 'running' AND attempts = ?
       RETURNING custom_id AS customId`,
    ),
    failed: db.prepare<unknown[], RowChange>(
      `UPDATE results SET status = 'failed', error = ?, settled_ms = ? WHERE batch_id = ? AND idx = ? AND status = 'running' AND attempts = ?
       RETURNING custom_id AS customId`,
    ),
    cancelledRow: db.prepare<unknown[], RowChange>(
      `UPDATE results SET status = 'cancelled', error = ?, settled_ms = ? WHERE batch_id = ? AND idx = ? AND status = 'running' AND attempts = ?
       RETURNING custom_id AS customId`,
    ),
    cancelIdle: db.prepare(`UPDATE results SET status = 'cancelled', error = NULL, retry_at = NULL WHERE batch_id = ? AND status = 'queued'`),
    failIdle: db.prepare(`UPDATE results SET status = 'failed', error = ?, retry_at = NULL WHERE batch_id = ? AND status = 'queued'`),
    expireIdle: db.prepare(`UPDATE results SET status = 'expired', error = ?, retry_at = NULL WHERE batch_id = ? AND status = 'queued'`),
    deleteResults: db.prepare(`DELETE FROM results WHERE batch_id = ?`),
    deleteChunks: db.prepare(`DELETE FROM row_chunks WHERE batch_id = ?`),
  }
  const errorText = (error: object | null) => (error === null ? null : JSON.stringify(error))
  const changed = (changes: number) => (changes > 0 ? UNSETTLED : undefined)
  /**
   * Applies a row event's effect (see rowEffect); answers undefined when it changed nothing, and so
   * nothing of the batch's counters either.
   */
  const applyRow = (event: RowEvent, effect: RowEffect): RowChange | undefined => {
    const { batch_id, row, attempt } = event
    switch (effect) {
      case "running":
        return changed((attempt > 1 ? s.retryStarted : s.started).run(attempt, batch_id, row, attempt).changes)
      case "queued":
        return event.type === "row_retrying" ? changed(s.retrying.run(JSON.stringify(event.error), event.retry_at, batch_id, row, attempt).changes) : undefined
      case "completed":
        return event.type === "row_completed" ? s.completed.get(JSON.stringify(event.response), event.at, batch_id, row, attempt) : undefined
      case "failed":
        return "error" in event ? s.failed.get(errorText(event.error), event.at, batch_id, row, attempt) : undefined
      case "cancelled":
        return s.cancelledRow.get("error" in event ? errorText(event.error) : null, event.at, batch_id, row, attempt)
    }
  }
  /** A batch event; `settlesIdle` says whether it settled the batch's idle rows at its place in the log. */
  const apply = (event: Exclude<BatchEvent, RowEvent>, settlesIdle: boolean, stored: Pick<LogMessage, "seq" | "firstSeq">) => {
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
        return
      }
      case "batch_cancelling":
        if (settlesIdle) s.cancelIdle.run(event.batch_id)
        return
      case "batch_failing":
      case "batch_failed":
        if (settlesIdle) s.failIdle.run(batchFailedError, event.batch_id)
        return
      case "batch_expiring":
      case "batch_expired":
        if (settlesIdle) s.expireIdle.run(batchExpiredError, event.batch_id)
        return
      case "batch_deleted":
      case "batch_purged":
        s.deleteResults.run(event.batch_id)
        s.deleteChunks.run(event.batch_id)
        return
      default:
        return
    }
  }
  return { applyRow, apply }
}
