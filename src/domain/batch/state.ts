import { type BatchStatus, FinalBatchStatuses } from "../api/BatchStatus.js"
import type { BatchEvent, BatchFailure, RowEvent } from "./events.js"
import { type ClosedAs, rowEffect } from "./rowEffect.js"
import { type RowPhase, RowPhases } from "./rowPhases.js"

export type { BatchStatus, ClosedAs, RowPhase }

export const isFinal = (status: BatchStatus) => FinalBatchStatuses.has(status)

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
  readonly rows: RowPhases
  /** Set once the batch stops starting rows (cancel, failure, expiry): every unstarted row was settled then. */
  readonly closedAs: ClosedAs | undefined
  /** Why a closing batch fails: the `error` it ends with. */
  readonly closingError: BatchFailure | undefined
  /** The final status whose event is in the log: the batch takes it once no row runs and none waits. */
  readonly finalWritten: FinalStatus | undefined
}

export type FinalStatus = "completed" | ClosedAs

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
  rows: RowPhases.empty(),
  closedAs: undefined,
  closingError: undefined,
  finalWritten: undefined,
})

export const isClosed = (state: BatchState) => state.closedAs !== undefined

export const rowPhase = (state: BatchState, row: number): RowPhase | undefined => state.rows.get(row)

/** Rows neither running nor finished: never started, or waiting to be retried. */
export const idleRows = (state: BatchState) =>
  state.total - state.running - state.completed - state.failed - state.cancelled

/** Stops the batch: every idle row is settled as the closing says, counted from the state here, not from a payload. */
const close = (state: BatchState, as: ClosedAs, error: BatchFailure | undefined): BatchState => {
  const idle = idleRows(state)
  const to = as === "cancelled" ? "cancelled" : as
  return {
    ...state,
    status: as === "cancelled" ? "cancelling" : state.status,
    closedAs: as,
    closingError: error,
    failed: as === "cancelled" ? state.failed : state.failed + idle,
    cancelled: as === "cancelled" ? state.cancelled + idle : state.cancelled,
    rows: RowPhases.fromEntries([...state.rows].map(([row, phase]) => [row, phase.status === "queued" ? { status: to, attempt: phase.attempt } : phase])),
  }
}

/** The final status written for the batch, taken once nothing runs or waits; the last row to settle takes it there. */
const finalIfDone = (state: BatchState): BatchState =>
  state.finalWritten !== undefined &&
  state.finalWritten === (state.closedAs ?? "completed") &&
  state.running === 0 &&
  idleRows(state) === 0
    ? { ...state, status: state.finalWritten }
    : state

/** A final event; one that is not the batch's own (a completion of a closed batch, another closing's) is ignored. */
const finalEvent = (state: BatchState, status: FinalStatus): BatchState =>
  (state.closedAs ?? "completed") === status ? finalIfDone({ ...state, finalWritten: status }) : state

const applyRow = (state: BatchState, event: RowEvent): BatchState => {
  const effect = rowEffect(state, event)
  if (effect === undefined || event.row < 0 || event.row >= state.total) return state
  const phase = rowPhase(state, event.row)
  if (effect === "running") {
    if ((phase !== undefined && phase.status !== "queued") || event.attempt <= (phase?.attempt ?? 0)) return state
    return {
      ...state,
      running: state.running + 1,
      rows: state.rows.set(event.row, { status: "running", attempt: event.attempt }),
    }
  }
  if (phase?.status !== "running" || phase.attempt !== event.attempt) return state
  if (effect === "queued") {
    const error = event.type === "row_retrying" ? event.error : { code: "upstream_error", message: "" }
    return {
      ...state,
      running: state.running - 1,
      rows: state.rows.set(event.row, { status: "queued", attempt: event.attempt, error }),
    }
  }
  return finalIfDone({
    ...state,
    running: state.running - 1,
    completed: state.completed + (effect === "completed" ? 1 : 0),
    failed: state.failed + (effect === "failed" ? 1 : 0),
    cancelled: state.cancelled + (effect === "cancelled" ? 1 : 0),
    costUsd: state.costUsd + (event.type === "row_completed" ? event.cost_usd : 0),
    rows: state.rows.set(event.row, { status: effect, attempt: event.attempt }),
  })
}

/**
 * Readers decide what an event does from the state at its place in the log, so that writers deciding
 * from slightly different views still leave every reader with the same batch. Once final, only the
 * batch's deletion changes it.
 */
export const evolve = (state: BatchState, event: BatchEvent): BatchState => {
  // A settle is evolved twice over: by the decider (closeIfDone, to see whether it ends the batch) and
  // by the writer that queues it. Both are immutable, so the same pair gives the same state: the last
  // one is answered again rather than made again (and its row phases moved back and forth).
  if (state === last.state && event === last.event) return last.evolved
  const evolved = evolveAnew(state, event)
  last = { state, event, evolved }
  return evolved
}
let last: { readonly state: BatchState | undefined; readonly event: BatchEvent | undefined; readonly evolved: BatchState } = {
  state: undefined,
  event: undefined,
  evolved: initialState(""),
}

const evolveAnew = (state: BatchState, event: BatchEvent): BatchState => {
  if (isFinal(state.status) && event.type !== "batch_deleted" && event.type !== "batch_purged") return state
  switch (event.type) {
    case "batch_created":
      return state.exists ? state : { ...state, exists: true, total: event.total }
    case "rows_added":
    case "row_bodies":
      return state
    case "batch_started":
      return state.status === "validating" ? { ...state, status: "in_progress" } : state
    case "row_started":
    case "row_retrying":
    case "row_completed":
    case "row_failed":
    case "row_cancelled":
      return applyRow(state, event)
    case "batch_cancelling":
      return isClosed(state) ? state : close(state, "cancelled", undefined)
    case "batch_failing":
      return isClosed(state) ? state : close(state, "failed", event.error)
    case "batch_expiring":
      return isClosed(state) ? state : close(state, "expired", undefined)
    case "batch_cancelled":
      return finalEvent(state, "cancelled")
    // Alone, as when nothing ran (and in logs written before batch_failing existed), it closes the batch too.
    case "batch_failed":
      return finalEvent(isClosed(state) ? state : close(state, "failed", event.error), "failed")
    case "batch_expired":
      return finalEvent(isClosed(state) ? state : close(state, "expired", undefined), "expired")
    case "batch_completed":
      return finalEvent(state, "completed")
    case "batch_deleted":
    case "batch_purged":
      return { ...state, deleted: true }
  }
}

export const replay = (id: string, events: Iterable<BatchEvent>): BatchState => {
  let state = initialState(id)
  for (const event of events) state = evolve(state, event)
  return state
}
