import type Database from "better-sqlite3"
import { OpenBatchStatuses } from "../domain/api/BatchStatus.js"
import type { BatchEvent } from "../domain/batch/events.js"
import { statusIn } from "./statusSql.js"

const rowEventTypes: ReadonlySet<string> = new Set(["row_started", "row_retrying", "row_completed", "row_failed", "row_cancelled"])
const secs = (ms: number) => Math.floor(ms / 1000)
const open = statusIn(OpenBatchStatuses)

interface Counters {
  running: number
  completed: number
  failed: number
  cancelled: number
  cost_usd: number
}

/**
 * Batch objects and their counters, one row per batch. Row events move counters held in memory,
 * added in log order, and `flush` writes them: call it before the transaction commits.
 */
export const batchesProjection = (
  db: Database.Database,
  statuses?: { readonly moved: (from: string | undefined, to: string | undefined) => void },
) => {
  const s = {
    created: db.prepare(
      `INSERT OR IGNORE INTO batches (id, account_id, key_id, seq, status, completion_window, created_at, expires_at, total, metadata, models)
       VALUES (?, ?, ?, ?, 'validating', ?, ?, ?, ?, ?, ?)`,
    ),
    started: db.prepare(`UPDATE batches SET status = 'in_progress', in_progress_at = ? WHERE id = ? AND status = 'validating'`),
    counters: db.prepare(`SELECT running, completed, failed, cancelled, cost_usd FROM batches WHERE id = ?`),
    setCounters: db.prepare(
      `UPDATE batches SET running = ?, completed = ?, failed = ?, cancelled = ?, cost_usd = ? WHERE id = ?`,
    ),
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
    status: db.prepare(`SELECT status FROM batches WHERE id = ?`),
  }
  const statusOf = (id: string) => (s.status.get(id) as { status: string } | undefined)?.status
  /** A lifecycle statement, the status it moved the batch from and to told to `statuses` when it took effect. */
  const moves = (id: string, to: string | undefined, run: () => Database.RunResult): boolean => {
    if (statuses === undefined) return run().changes > 0
    const from = statusOf(id)
    const changed = run().changes > 0
    if (changed) statuses.moved(from, to)
    return changed
  }
  const held = new Map<string, Counters | undefined>()
  const counters = (id: string): Counters | undefined => {
    if (held.has(id)) return held.get(id)
    const row = s.counters.get(id) as Counters | undefined
    held.set(id, row)
    return row
  }
  const flush = () => {
    for (const [id, c] of held) if (c !== undefined) s.setCounters.run(c.running, c.completed, c.failed, c.cancelled, c.cost_usd, id)
    held.clear()
  }
  const settle = (id: string, change: (c: Counters) => void) => {
    const c = counters(id)
    if (c === undefined) return false
    change(c)
    return true
  }
  /** Answers whether a closing event took effect, so the row projections settle idle rows only then. */
  const apply = (event: BatchEvent, seq: number): boolean => {
    if (!rowEventTypes.has(event.type)) flush()
    switch (event.type) {
      case "batch_created":
        moves(event.batch_id, "validating", () => s.created.run(
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
        ))
        return true
      case "rows_added":
      case "row_bodies":
        return true
      case "batch_started":
        return moves(event.batch_id, "in_progress", () => s.started.run(secs(event.at), event.batch_id))
      case "row_started":
        return settle(event.batch_id, (c) => {
          c.running += 1
        })
      case "row_retrying":
        return settle(event.batch_id, (c) => {
          c.running -= 1
        })
      case "row_completed":
        return settle(event.batch_id, (c) => {
          c.running -= 1
          c.completed += 1
          c.cost_usd += event.cost_usd
        })
      case "row_failed":
        return settle(event.batch_id, (c) => {
          c.running -= 1
          c.failed += 1
        })
      case "row_cancelled":
        return settle(event.batch_id, (c) => {
          c.running -= 1
          c.cancelled += 1
        })
      case "batch_cancelling":
        return moves(event.batch_id, "cancelling", () => s.cancelling.run(secs(event.at), event.cancelled_rows, event.batch_id))
      case "batch_failed":
        return moves(event.batch_id, "failed", () =>
          s.failed.run(secs(event.at), JSON.stringify(event.error), event.failed_rows, event.batch_id),
        )
      case "batch_expired":
        return moves(event.batch_id, "expired", () => s.expired.run(secs(event.at), event.expired_rows, event.batch_id))
      case "batch_cancelled":
        return moves(event.batch_id, "cancelled", () => s.cancelled.run(secs(event.at), event.batch_id))
      case "batch_completed":
        return moves(event.batch_id, "completed", () => s.completed.run(secs(event.at), event.batch_id))
      case "batch_deleted":
        return moves(event.batch_id, undefined, () => s.deleted.run(event.batch_id))
    }
  }
  return { apply, flush, discard: () => held.clear() }
}
