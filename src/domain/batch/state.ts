import { HashMap, Option } from "effect"
import { type BatchStatus, FinalBatchStatuses } from "../api/BatchStatus.js"
import type { BatchEvent, RowError } from "./events.js"

export type { BatchStatus }

export const isFinal = (status: BatchStatus) => FinalBatchStatuses.has(status)

export type RowPhase =
  | { readonly status: "running"; readonly attempt: number }
  | { readonly status: "queued"; readonly attempt: number; readonly error: RowError }
  | { readonly status: "completed" | "failed" | "cancelled" | "expired"; readonly attempt: number }

export interface BatchState {
  readonly id: string
  readonly exists: boolean
  readonly deleted: boolean
  readonly status: BatchStatus
  readonly total: number
  readonly completed: number
  readonly failed: number
  readonly cancelled: number
  readonly running: number
  readonly costUsd: number
  /** Rows that have left their initial never-started state; a row absent here was never started. */
  readonly rows: HashMap.HashMap<number, RowPhase>
  /** Set once the batch stops starting rows (cancel, failure, expiry): every unstarted row was settled then. */
  readonly closed: boolean
}

export const initialState = (id: string): BatchState => ({
  id,
  exists: false,
  deleted: false,
  status: "validating",
  total: 0,
  completed: 0,
  failed: 0,
  cancelled: 0,
  running: 0,
  costUsd: 0,
  rows: HashMap.empty(),
  closed: false,
})

export const rowPhase = (state: BatchState, row: number): RowPhase | undefined =>
  Option.getOrUndefined(HashMap.get(state.rows, row))

/** Rows neither running nor finished: never started, or waiting to be retried. */
export const idleRows = (state: BatchState) =>
  state.total - state.running - state.completed - state.failed - state.cancelled

const settleIdle = (state: BatchState, to: "cancelled" | "failed" | "expired"): HashMap.HashMap<number, RowPhase> =>
  HashMap.map(state.rows, (phase) => (phase.status === "queued" ? { status: to, attempt: phase.attempt } : phase))

const finishRow = (
  state: BatchState,
  row: number,
  attempt: number,
  to: "completed" | "failed" | "cancelled",
): BatchState => ({
  ...state,
  running: state.running - 1,
  completed: state.completed + (to === "completed" ? 1 : 0),
  failed: state.failed + (to === "failed" ? 1 : 0),
  cancelled: state.cancelled + (to === "cancelled" ? 1 : 0),
  rows: HashMap.set(state.rows, row, { status: to, attempt }),
})

const closingTypes: ReadonlySet<BatchEvent["type"]> = new Set([
  "batch_cancelling",
  "batch_failed",
  "batch_expired",
  "batch_cancelled",
  "batch_completed",
])

export const evolve = (state: BatchState, event: BatchEvent): BatchState => {
  // Two writers racing past the log's guards must not reopen a final batch: the first final event wins.
  if (closingTypes.has(event.type) && (isFinal(state.status) || (state.closed && event.type !== "batch_cancelled"))) {
    return state
  }
  switch (event.type) {
    case "batch_created":
      return { ...state, exists: true, total: event.total }
    case "rows_added":
    case "row_bodies":
      return state
    case "batch_started":
      return state.status === "validating" ? { ...state, status: "in_progress" } : state
    case "row_started":
      return {
        ...state,
        running: state.running + 1,
        rows: HashMap.set(state.rows, event.row, { status: "running", attempt: event.attempt }),
      }
    case "row_retrying":
      return {
        ...state,
        running: state.running - 1,
        rows: HashMap.set(state.rows, event.row, { status: "queued", attempt: event.attempt, error: event.error }),
      }
    case "row_completed":
      return { ...finishRow(state, event.row, event.attempt, "completed"), costUsd: state.costUsd + event.cost_usd }
    case "row_failed":
      return finishRow(state, event.row, event.attempt, "failed")
    case "row_cancelled":
      return finishRow(state, event.row, event.attempt, "cancelled")
    case "batch_cancelling":
      return {
        ...state,
        status: "cancelling",
        closed: true,
        cancelled: state.cancelled + event.cancelled_rows,
        rows: settleIdle(state, "cancelled"),
      }
    case "batch_failed":
      return {
        ...state,
        status: "failed",
        closed: true,
        failed: state.failed + event.failed_rows,
        rows: settleIdle(state, "failed"),
      }
    case "batch_expired":
      return {
        ...state,
        status: "expired",
        closed: true,
        failed: state.failed + event.expired_rows,
        rows: settleIdle(state, "expired"),
      }
    case "batch_cancelled":
      return { ...state, status: "cancelled" }
    case "batch_completed":
      return { ...state, status: "completed" }
    case "batch_deleted":
      return { ...state, deleted: true }
  }
}

export const replay = (id: string, events: Iterable<BatchEvent>): BatchState => {
  let state = initialState(id)
  for (const event of events) state = evolve(state, event)
  return state
}
