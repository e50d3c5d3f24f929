import { HashMap } from "effect"
import type { BatchState, BatchStatus, ClosedAs, FinalStatus, RowPhase } from "../domain/batch/state.js"
import type { ReadModel } from "../projections/ReadModel.js"

/** Rebuilds a batch's decider state from the read model, whose rows the log's events produced. */
export const loadBatchState = (db: ReadModel["Type"], batchId: string): BatchState | undefined => {
  const batch = db
    .prepare(
      `SELECT status, total, completed, failed, cancelled, running, cost_usd, closing, closing_error, final_written FROM batches WHERE id = ?`,
    )
    .get(batchId) as
    | {
        status: BatchStatus
        total: number
        completed: number
        failed: number
        cancelled: number
        running: number
        cost_usd: number
        closing: ClosedAs | null
        closing_error: string | null
        final_written: FinalStatus | null
      }
    | undefined
  if (batch === undefined) return undefined
  const started = db
    .prepare(`SELECT idx, status, attempts, error FROM results WHERE batch_id = ? AND attempts > 0`)
    .all(batchId) as Array<{ idx: number; status: string; attempts: number; error: string | null }>
  const rows = HashMap.fromIterable(
    started.map(({ idx, status, attempts, error }): [number, RowPhase] => [
      idx,
      status === "queued"
        ? { status: "queued", attempt: attempts, error: error === null ? { code: "upstream_error", message: "" } : JSON.parse(error) }
        : { status: status as "running" | "completed" | "failed" | "cancelled" | "expired", attempt: attempts },
    ]),
  )
  return {
    id: batchId,
    exists: true,
    deleted: false,
    status: batch.status,
    total: batch.total,
    completed: batch.completed,
    failed: batch.failed,
    cancelled: batch.cancelled,
    running: batch.running,
    costUsd: batch.cost_usd,
    rows,
    closedAs: batch.closing ?? undefined,
    closingError: batch.closing_error === null ? undefined : JSON.parse(batch.closing_error),
    finalWritten: batch.final_written ?? undefined,
  }
}

/** Whose batch it is and which models its rows use, for the writer's logs and metrics. */
export interface BatchOwner {
  readonly accountId: string
  readonly models: ReadonlyArray<string>
}

export const loadBatchOwner = (db: ReadModel["Type"], batchId: string): BatchOwner | undefined => {
  const row = db.prepare(`SELECT account_id, models FROM batches WHERE id = ?`).get(batchId) as
    | { account_id: string; models: string }
    | undefined
  return row === undefined ? undefined : { accountId: row.account_id, models: JSON.parse(row.models) as Array<string> }
}

/** Each row's model, by index: read once, when a batch of several models closes with rows unstarted. */
export const loadRowModels = (db: ReadModel["Type"], batchId: string): Array<string> => {
  const models: Array<string> = []
  for (const { idx, model } of db.prepare(`SELECT idx, model FROM results WHERE batch_id = ?`).iterate(batchId) as Iterable<{
    idx: number
    model: string
  }>) {
    models[idx] = model
  }
  return models
}
