import { Data, Either } from "effect"
import { MAX_ATTEMPTS } from "../upstream/retryPolicy.js"
import type { BatchEvent, BatchFailure, DeletionReason, RowError, RowResponse } from "./events.js"
import { type BatchState, type ClosedAs, evolve, idleRows, isClosed, isFinal, rowPhase } from "./state.js"

export type RowOutcome =
  | { readonly _tag: "Completed"; readonly response: RowResponse; readonly costUsd: number }
  /** `error.code` is the code the row ends with if no attempt is left. */
  | { readonly _tag: "Retryable"; readonly error: RowError; readonly retryAt: number }
  | { readonly _tag: "Permanent"; readonly error: RowError }

export type BatchCommand =
  | { readonly type: "StartRow"; readonly row: number; readonly at: number }
  | { readonly type: "SettleRow"; readonly row: number; readonly attempt: number; readonly at: number; readonly outcome: RowOutcome }
  /** After a restart: the attempt that was running when the process stopped is lost and must run again. */
  | { readonly type: "InterruptRow"; readonly row: number; readonly at: number }
  /** After a restart: closes a batch whose last row settled but whose closing event was not written. */
  | { readonly type: "Reconcile"; readonly at: number }
  | { readonly type: "Cancel"; readonly at: number }
  | { readonly type: "Fail"; readonly at: number; readonly error: BatchFailure }
  | { readonly type: "Expire"; readonly at: number }
  | { readonly type: "Delete"; readonly at: number; readonly reason?: DeletionReason }

export class BatchNotFound extends Data.TaggedError("BatchNotFound")<{ readonly batchId: string }> {}
export class RowsStillRunning extends Data.TaggedError("RowsStillRunning")<{
  readonly batchId: string
  readonly running: number
}> {}

export class BatchExists extends Data.TaggedError("BatchExists")<{ readonly batchId: string }> {}

export type Rejection = BatchNotFound | RowsStillRunning
export type Decision = Either.Either<ReadonlyArray<BatchEvent>, Rejection>

const none: Decision = Either.right([])

/** The final event of a batch closed `as`, settling the rows still idle when it is written. */
const finalEvent = (state: BatchState, as: ClosedAs, at: number, error: BatchFailure | undefined): BatchEvent => {
  const batch_id = state.id
  switch (as) {
    case "cancelled":
      return { type: "batch_cancelled", batch_id, at }
    case "failed":
      return { type: "batch_failed", batch_id, at, error: error ?? state.closingError!, failed_rows: idleRows(state) }
    case "expired":
      return { type: "batch_expired", batch_id, at, expired_rows: idleRows(state) }
  }
}

/** The batch's final event once nothing runs and nothing waits, given the events just decided. */
const closeIfDone = (state: BatchState, decided: ReadonlyArray<BatchEvent>, at: number): ReadonlyArray<BatchEvent> => {
  const after = decided.reduce(evolve, state)
  if (after.running > 0 || isFinal(after.status)) return decided
  if (after.closedAs !== undefined) return [...decided, finalEvent(after, after.closedAs, at, undefined)]
  if (idleRows(after) === 0) return [...decided, { type: "batch_completed", batch_id: state.id, at }]
  return decided
}

const startRow = (state: BatchState, row: number, at: number): Decision => {
  if (isClosed(state) || isFinal(state.status) || row < 0 || row >= state.total) return none
  const phase = rowPhase(state, row)
  if (phase !== undefined && phase.status !== "queued") return none
  const attempt = (phase?.attempt ?? 0) + 1
  if (attempt > MAX_ATTEMPTS) return none
  const started: BatchEvent = { type: "row_started", batch_id: state.id, row, attempt, at }
  return Either.right(
    state.status === "validating" ? [{ type: "batch_started", batch_id: state.id, at }, started] : [started],
  )
}

const settleRow = (state: BatchState, row: number, attempt: number, at: number, outcome: RowOutcome): Decision => {
  const phase = rowPhase(state, row)
  if (phase?.status !== "running" || phase.attempt !== attempt) return none
  const ids = { batch_id: state.id, row, attempt, at }
  const event: BatchEvent = (() => {
    switch (outcome._tag) {
      case "Completed":
        return { type: "row_completed", ...ids, response: outcome.response, cost_usd: outcome.costUsd }
      case "Permanent":
        return { type: "row_failed", ...ids, error: outcome.error }
      case "Retryable":
        if (state.status === "cancelling") return { type: "row_cancelled", ...ids, error: outcome.error }
        // A failed or expired batch starts nothing more: the row ends with the error it has.
        if (isClosed(state)) return { type: "row_failed", ...ids, error: outcome.error }
        if (attempt >= MAX_ATTEMPTS) return { type: "row_failed", ...ids, error: outcome.error }
        return { type: "row_retrying", ...ids, error: outcome.error, retry_at: outcome.retryAt }
    }
  })()
  return Either.right(closeIfDone(state, [event], at))
}

const interruptRow = (state: BatchState, row: number, at: number): Decision => {
  const phase = rowPhase(state, row)
  if (phase?.status !== "running") return none
  return settleRow(state, row, phase.attempt, at, {
    _tag: "Retryable",
    error: { code: "upstream_error", message: "The request was interrupted by a restart of the batch service" },
    retryAt: at,
  })
}

/**
 * Stops the batch starting rows. With rows running, the closing settles the idle rows and the batch
 * keeps its status until they have finished; with none, a failure or expiry is final at once.
 */
const close = (state: BatchState, as: ClosedAs, at: number, error?: BatchFailure): Decision => {
  if (isClosed(state) || isFinal(state.status)) return none
  // Every row already settled but the closing event was lost to a crash: the batch completed.
  const finished = closeIfDone(state, [], at)
  if (finished.length > 0) return Either.right(finished)
  if (as !== "cancelled" && state.running === 0) return Either.right([finalEvent(state, as, at, error)])
  const idle = idleRows(state)
  const batch_id = state.id
  const closing: BatchEvent =
    as === "cancelled"
      ? { type: "batch_cancelling", batch_id, at, cancelled_rows: idle }
      : as === "failed"
        ? { type: "batch_failing", batch_id, at, error: error!, failed_rows: idle }
        : { type: "batch_expiring", batch_id, at, expired_rows: idle }
  return Either.right(closeIfDone(state, [closing], at))
}

export const decide = (command: BatchCommand, state: BatchState): Decision => {
  if (!state.exists || state.deleted) return Either.left(new BatchNotFound({ batchId: state.id }))
  switch (command.type) {
    case "StartRow":
      return startRow(state, command.row, command.at)
    case "SettleRow":
      return settleRow(state, command.row, command.attempt, command.at, command.outcome)
    case "InterruptRow":
      return interruptRow(state, command.row, command.at)
    case "Reconcile":
      return Either.right(closeIfDone(state, [], command.at))
    case "Cancel":
      return close(state, "cancelled", command.at)
    case "Fail":
      return close(state, "failed", command.at, command.error)
    case "Expire":
      return close(state, "expired", command.at)
    case "Delete":
      return state.running > 0
        ? Either.left(new RowsStillRunning({ batchId: state.id, running: state.running }))
        : Either.right([{ type: "batch_deleted", v: 2, batch_id: state.id, at: command.at, reason: command.reason ?? "deleted" }])
  }
}

/** A create is a decision like any other: a batch id that the log already holds is not created again. */
export const decideCreate = (
  created: Extract<BatchEvent, { readonly type: "batch_created" }>,
  state: BatchState,
): Either.Either<ReadonlyArray<BatchEvent>, BatchExists> =>
  state.exists || state.deleted ? Either.left(new BatchExists({ batchId: state.id })) : Either.right([created])
