import type Database from "better-sqlite3"
import type { Types } from "effect"
import { type BatchStatus, FinalBatchStatuses, OpenBatchStatuses } from "../domain/api/BatchStatus.js"
import type { BatchEvent, RowEvent } from "../domain/batch/events.js"
import type { ClosedAs, RowEffect } from "../domain/batch/rowEffect.js"
import type { FinalStatus } from "../domain/batch/state.js"
import { addTokens, completionTokens, type TokenTotals } from "../domain/batch/tokenTotals.js"
import { statusIn } from "./statusSql.js"
import { batchRowCache } from "./batchRowCache.js"

const secs = (ms: number) => Math.floor(ms / 1000)
const open = statusIn(OpenBatchStatuses)
const notFinal = `NOT ${statusIn(FinalBatchStatuses)}`
const idle = `(total - running - completed - failed - cancelled)`

/** A batch as its row events see it: its counters, held in memory and added in log order, and how it stands. */
export interface RowTarget extends Types.Mutable<TokenTotals> {
  readonly account_id: string
  status: BatchStatus
  readonly closing: ClosedAs | null
  readonly final_written: FinalStatus | null
  readonly total: number
  running: number
  completed: number
  failed: number
  cancelled: number
  cost_usd: number
  /** Rows asleep until their retry. */
  retrying: number
  moved_ms: number | null
  /** Set when a row event made the batch final: the time it did. */
  finishedAt?: number
}

/**
 * Batch objects and their counters, one row per batch, and the tombstones deleted batches leave.
 * Row events move counters held in memory, and `flush` writes them: call it before the transaction
 * commits. A closing event settles the rows idle at its place in the log, counted from the batch's own
 * counters there; a final event while rows run or wait makes the batch final when the last of them settles.
 */
/**
 * What the model actors of every instance learn from the log: a batch to take rows from, a batch that
 * stops taking them, and a batch whose every row has settled but whose final event is not written yet.
 */
export type BatchChange =
  | { readonly kind: "created"; readonly batchId: string; readonly models: ReadonlyArray<string> }
  | { readonly kind: "closed"; readonly batchId: string }
  | { readonly kind: "settled"; readonly batchId: string }

export const batchesProjection = (
  db: Database.Database,
  statuses?: { readonly moved: (from: string | undefined, to: string | undefined) => void },
  changed?: (change: BatchChange) => void,
) => {
  const s = {
    created: db.prepare(
      `INSERT OR IGNORE INTO batches (id, account_id, key_id, seq, status, completion_window, created_at, created_ms, expires_at, total, metadata, models, rerun_of, endpoint, input_file_id, priority)
       VALUES (?, ?, ?, ?, 'validating', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    started: db.prepare(`UPDATE batches SET status = 'in_progress', in_progress_at = ?, started_ms = ? WHERE id = ? AND status = 'validating'`),
    target: db.prepare(
      `SELECT account_id, status, closing, final_written, total, running, completed, failed, cancelled, cost_usd,
         input_tokens, cached_tokens, output_tokens, reasoning_tokens, total_tokens, retrying, moved_ms
       FROM batches WHERE id = ?`,
    ),
    setCounters: db.prepare(
      `UPDATE batches SET running = ?, completed = ?, failed = ?, cancelled = ?, cost_usd = ?,
         input_tokens = ?, cached_tokens = ?, output_tokens = ?, reasoning_tokens = ?, total_tokens = ?, retrying = ?, moved_ms = ?
       WHERE id = ?`,
    ),
    close: db.prepare(
      `UPDATE batches SET closing = @as, closing_error = @error, retrying = 0,
         status = CASE WHEN @as = 'cancelled' THEN 'cancelling' ELSE status END,
         cancelling_at = CASE WHEN @as = 'cancelled' THEN @at ELSE cancelling_at END,
         failed = failed + CASE WHEN @as = 'cancelled' THEN 0 ELSE ${idle} END,
         cancelled = cancelled + CASE WHEN @as = 'cancelled' THEN ${idle} ELSE 0 END
       WHERE id = @id AND closing IS NULL AND ${open}`,
    ),
    // A final event that is not the batch's own (a completion of a closed batch, another closing's) changes nothing.
    finalWritten: db.prepare(`UPDATE batches SET final_written = @status WHERE id = @id AND coalesce(closing, 'completed') = @status AND ${notFinal}`),
    finish: db.prepare(
      `UPDATE batches SET status = final_written,
         completed_at = CASE WHEN final_written = 'completed' THEN @at ELSE completed_at END,
         failed_at = CASE WHEN final_written = 'failed' THEN @at ELSE failed_at END,
         expired_at = CASE WHEN final_written = 'expired' THEN @at ELSE expired_at END,
         cancelled_at = CASE WHEN final_written = 'cancelled' THEN @at ELSE cancelled_at END,
         error = CASE WHEN final_written = 'failed' THEN closing_error ELSE error END,
         ended_ms = @ms
       WHERE id = @id AND final_written = coalesce(closing, 'completed') AND running = 0 AND ${idle} = 0 AND ${notFinal}`,
    ),
    tombstone: db.prepare(
      `INSERT OR IGNORE INTO tombstones (id, account_id, created_at, deleted_at, reason, purged)
       SELECT id, account_id, created_ms, ?, ?, 0 FROM batches WHERE id = ?`,
    ),
    deleted: db.prepare(`DELETE FROM batches WHERE id = ?`),
    purged: db.prepare(
      `INSERT INTO tombstones (id, account_id, created_at, deleted_at, reason, purged) VALUES (?, ?, ?, ?, ?, 1)
       ON CONFLICT (id) DO UPDATE SET purged = 1`,
    ),
    status: db.prepare(`SELECT status FROM batches WHERE id = ?`),
  }
  // Every statement below that writes a batch's row forgets what readers were given of it.
  const cache = batchRowCache(db)
  const statusOf = (id: string) => (s.status.get(id) as { status: string } | undefined)?.status
  /** A lifecycle statement, the status it moved the batch from and to told to `statuses`, when it moved it. */
  const moves = <A>(id: string, run: () => A): A => {
    cache.forget(id)
    if (statuses === undefined) return run()
    const from = statusOf(id)
    const result = run()
    const to = statusOf(id)
    if (to !== from) statuses.moved(from, to)
    return result
  }
  const held = new Map<string, RowTarget | undefined>()
  const target = (id: string): RowTarget | undefined => {
    if (held.has(id)) return held.get(id)
    const row = s.target.get(id) as RowTarget | undefined
    held.set(id, row)
    return row
  }
  const flush = () => {
    for (const [id, c] of held) {
      if (c === undefined) continue
      cache.forget(id)
      s.setCounters.run(
        c.running, c.completed, c.failed, c.cancelled, c.cost_usd,
        c.input_tokens, c.cached_tokens, c.output_tokens, c.reasoning_tokens, c.total_tokens, c.retrying, c.moved_ms,
        id,
      )
      const finishedAt = c.finishedAt
      if (finishedAt !== undefined) moves(id, () => s.finish.run({ id, at: secs(finishedAt), ms: finishedAt }))
    }
    held.clear()
  }
  /** A row event's effect (see rowEffect), once the row's own projection has taken it. */
  const applyRow = (event: RowEvent, c: RowTarget, effect: RowEffect) => {
    c.moved_ms = Math.max(c.moved_ms ?? 0, event.at)
    if (effect === "running") {
      c.running += 1
      // A later attempt starts a row that slept until its retry (the results projection took it from there).
      if (event.attempt > 1) c.retrying = Math.max(0, c.retrying - 1)
      return
    }
    c.running -= 1
    if (effect === "queued") {
      c.retrying += 1
      return
    }
    if (effect === "completed") c.completed += 1
    else if (effect === "failed") c.failed += 1
    else c.cancelled += 1
    if (event.type === "row_completed") {
      c.cost_usd += event.cost_usd
      Object.assign(c, addTokens(c, completionTokens(event.response.body)))
    }
    const idleLeft = c.total - c.running - c.completed - c.failed - c.cancelled
    if (c.final_written !== null && c.final_written === (c.closing ?? "completed") && c.running === 0 && idleLeft === 0) {
      c.status = c.final_written
      c.finishedAt = event.at
    } else if (c.running === 0 && idleLeft === 0) changed?.({ kind: "settled", batchId: event.batch_id })
  }
  const close = (id: string, as: ClosedAs, at: number, error: object | null) =>
    moves(id, () => s.close.run({ id, as, at: secs(at), error: error === null ? null : JSON.stringify(error) }).changes > 0)
  /** Batches a closing event closed in this window, while no final event followed it yet. */
  const closedNow = new Set<string>()
  const closing = (id: string, as: ClosedAs, at: number, error: object | null) => {
    const closed = close(id, as, at, error)
    if (closed) closedNow.add(id)
    return closed
  }
  /**
   * A closing decided on a batch read while its last running row settled on another instance's lane
   * leaves nothing running, so no row's settle brings the final event: reconciling must. Checked once
   * the window is applied, since a closing decided with nothing running is followed by its final event.
   */
  const settleClosed = () => {
    for (const id of closedNow) {
      const c = s.target.get(id) as RowTarget | undefined
      if (c !== undefined && c.final_written !== c.closing && c.running === 0) changed?.({ kind: "settled", batchId: id })
    }
    closedNow.clear()
  }
  const finalEvent = (id: string, status: FinalStatus, at: number) => {
    cache.forget(id)
    s.finalWritten.run({ status, id })
    moves(id, () => s.finish.run({ id, at: secs(at), ms: at }))
  }
  /** Answers whether the event settled the batch's idle rows here, which the results projection then does too. */
  const apply = (event: Exclude<BatchEvent, RowEvent>, seq: number): boolean => {
    flush()
    if (event.type !== "batch_created" && event.type !== "rows_added" && event.type !== "row_bodies" && event.type !== "batch_started") {
      changed?.({ kind: "closed", batchId: event.batch_id })
    }
    switch (event.type) {
      case "batch_created":
        moves(event.batch_id, () => s.created.run(
          event.batch_id,
          event.account_id,
          event.key_id,
          seq,
          event.completion_window,
          secs(event.created_at),
          event.created_at,
          secs(event.expires_at),
          event.total,
          event.metadata === null ? null : JSON.stringify(event.metadata),
          JSON.stringify(event.models),
          event.rerun_of ?? null,
          event.endpoint ?? null,
          event.input_file_id ?? null,
          event.priority ?? null,
        ))
        changed?.({ kind: "created", batchId: event.batch_id, models: event.models })
        return false
      case "rows_added":
      case "row_bodies":
        return false
      case "batch_started":
        moves(event.batch_id, () => s.started.run(secs(event.at), event.at, event.batch_id))
        return false
      case "batch_cancelling":
        return closing(event.batch_id, "cancelled", event.at, null)
      case "batch_failing":
        return closing(event.batch_id, "failed", event.at, event.error)
      case "batch_expiring":
        return closing(event.batch_id, "expired", event.at, null)
      case "batch_cancelled":
        finalEvent(event.batch_id, "cancelled", event.at)
        return false
      case "batch_failed": {
        const closed = close(event.batch_id, "failed", event.at, event.error)
        finalEvent(event.batch_id, "failed", event.at)
        return closed
      }
      case "batch_expired": {
        const closed = close(event.batch_id, "expired", event.at, null)
        finalEvent(event.batch_id, "expired", event.at)
        return closed
      }
      case "batch_completed":
        finalEvent(event.batch_id, "completed", event.at)
        return false
      case "batch_deleted":
        s.tombstone.run(event.at, event.reason, event.batch_id)
        moves(event.batch_id, () => s.deleted.run(event.batch_id))
        return false
      case "batch_purged":
        s.purged.run(event.batch_id, event.account_id, event.created_at, event.deleted_at, event.reason)
        moves(event.batch_id, () => s.deleted.run(event.batch_id))
        return false
    }
  }
  return {
    apply,
    target,
    applyRow,
    flush,
    settleClosed,
    discard: () => {
      held.clear()
      closedNow.clear()
    },
  }
}
