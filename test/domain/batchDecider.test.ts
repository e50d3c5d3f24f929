import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { type BatchCommand, type Rejection, type RowOutcome, decide } from "../../src/domain/batch/decide.js"
import type { BatchEvent, RowError } from "../../src/domain/batch/events.js"
import { replay } from "../../src/domain/batch/state.js"
import { MAX_ATTEMPTS } from "../../src/domain/upstream/retryPolicy.js"

const batch_id = "batch_spec"

const given = (...events: ReadonlyArray<BatchEvent>) => ({
  when: (command: BatchCommand) => {
    const decision = decide(command, replay(batch_id, events))
    const emitted = () =>
      Either.getOrThrowWith(decision, (rejection) => new Error(`expected events, was rejected with ${rejection._tag}`))
    return {
      then: (...expected: ReadonlyArray<BatchEvent>) => expect(emitted()).toEqual(expected),
      thenNothingHappened: () => expect(emitted()).toEqual([]),
      thenRejects: (tag: Rejection["_tag"]) =>
        expect(Either.match(decision, { onLeft: (rejection) => rejection._tag, onRight: (events) => events })).toEqual(tag),
    }
  },
})

const created = (total: number): BatchEvent => ({
  type: "batch_created",
  batch_id,
  account_id: "acct_1",
  key_id: "key_1",
  created_at: 0,
  expires_at: 86_400_000,
  completion_window: "24h",
  metadata: null,
  total,
  models: ["glm-5.3-flash"],
})
const batchStarted = (at: number): BatchEvent => ({ type: "batch_started", batch_id, at })
const rowStarted = (row: number, attempt: number, at: number): BatchEvent => ({ type: "row_started", batch_id, row, attempt, at })

const response = { status_code: 200, request_id: "req_1", body: { object: "chat.completion" } }
const rateLimited: RowError = { code: "rate_limited", message: "Too many requests", status: 429 }
const badRequest: RowError = { code: "invalid_request", message: "Bad request", status: 400 }
const interrupted: RowError = {
  code: "upstream_error",
  message: "The request was interrupted by a restart of the batch service",
}
const revoked = { code: "owner_unauthorized", message: "The key that created this batch was revoked" }

const ok: RowOutcome = { _tag: "Completed", response, costUsd: 0.002 }
const retryLater = (retryAt: number): RowOutcome => ({ _tag: "Retryable", error: rateLimited, retryAt })
const rejected: RowOutcome = { _tag: "Permanent", error: badRequest }

const rowCompleted = (row: number, attempt: number, at: number): BatchEvent => ({
  type: "row_completed",
  batch_id,
  row,
  attempt,
  at,
  response,
  cost_usd: 0.002,
})
const rowRetrying = (row: number, attempt: number, at: number, retry_at: number, error = rateLimited): BatchEvent => ({
  type: "row_retrying",
  batch_id,
  row,
  attempt,
  at,
  error,
  retry_at,
})
const rowFailed = (row: number, attempt: number, at: number, error: RowError): BatchEvent => ({
  type: "row_failed",
  batch_id,
  row,
  attempt,
  at,
  error,
})
const rowCancelled = (row: number, attempt: number, at: number, error: RowError | null): BatchEvent => ({
  type: "row_cancelled",
  batch_id,
  row,
  attempt,
  at,
  error,
})
const batchCancelling = (at: number, cancelled_rows: number): BatchEvent => ({ type: "batch_cancelling", batch_id, at, cancelled_rows })
const batchCancelled = (at: number): BatchEvent => ({ type: "batch_cancelled", batch_id, at })
const batchCompleted = (at: number): BatchEvent => ({ type: "batch_completed", batch_id, at })
const batchFailed = (at: number, failed_rows: number): BatchEvent => ({ type: "batch_failed", batch_id, at, error: revoked, failed_rows })
const batchExpired = (at: number, expired_rows: number): BatchEvent => ({ type: "batch_expired", batch_id, at, expired_rows })
const batchFailing = (at: number, failed_rows: number): BatchEvent => ({ type: "batch_failing", batch_id, at, error: revoked, failed_rows })
const batchExpiring = (at: number, expired_rows: number): BatchEvent => ({ type: "batch_expiring", batch_id, at, expired_rows })
const batchDeleted = (at: number, reason: "deleted" | "retention" = "deleted"): BatchEvent => ({ type: "batch_deleted", v: 2, batch_id, at, reason })

/** A row that failed transiently on each of its attempts so far and waits to run again. */
const retriedTimes = (row: number, attempts: number): ReadonlyArray<BatchEvent> =>
  Array.from({ length: attempts }, (_, i) => [rowStarted(row, i + 1, 10 + 2 * i), rowRetrying(row, i + 1, 11 + 2 * i, 100)]).flat()

describe("batch decider: starting rows", () => {
  it("the first StartRow starts the batch and the row's first attempt", () =>
    given(created(2)).when({ type: "StartRow", row: 0, at: 5 }).then(batchStarted(5), rowStarted(0, 1, 5)))

  it("a later StartRow starts only the row", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5)).when({ type: "StartRow", row: 1, at: 6 }).then(rowStarted(1, 1, 6)))

  it("starting a running row again does nothing", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5)).when({ type: "StartRow", row: 0, at: 6 }).thenNothingHappened())

  it("starting a finished row does nothing", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), rowCompleted(0, 1, 6))
      .when({ type: "StartRow", row: 0, at: 7 })
      .thenNothingHappened())

  it("starting a row outside the batch does nothing", () => {
    given(created(2)).when({ type: "StartRow", row: 2, at: 5 }).thenNothingHappened()
    given(created(2)).when({ type: "StartRow", row: -1, at: 5 }).thenNothingHappened()
  })
})

describe("batch decider: settling rows", () => {
  it("completing the last row completes the batch", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), rowStarted(1, 1, 5), rowCompleted(0, 1, 8))
      .when({ type: "SettleRow", row: 1, attempt: 1, at: 9, outcome: ok })
      .then(rowCompleted(1, 1, 9), batchCompleted(9)))

  it("completing a row while another runs completes only the row", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), rowStarted(1, 1, 5))
      .when({ type: "SettleRow", row: 0, attempt: 1, at: 8, outcome: ok })
      .then(rowCompleted(0, 1, 8)))

  it("completing a row while another has not started completes only the row", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5))
      .when({ type: "SettleRow", row: 0, attempt: 1, at: 8, outcome: ok })
      .then(rowCompleted(0, 1, 8)))

  it("a retryable failure before the last attempt queues the row to be retried", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5))
      .when({ type: "SettleRow", row: 0, attempt: 1, at: 8, outcome: retryLater(1_008) })
      .then(rowRetrying(0, 1, 8, 1_008)))

  it("a row queued for retry starts again as its next attempt", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), rowRetrying(0, 1, 8, 1_008))
      .when({ type: "StartRow", row: 0, at: 1_010 })
      .then(rowStarted(0, 2, 1_010)))

  it(`a retryable failure of attempt ${MAX_ATTEMPTS - 1} is still retried`, () =>
    given(created(1), batchStarted(5), ...retriedTimes(0, MAX_ATTEMPTS - 2), rowStarted(0, MAX_ATTEMPTS - 1, 50))
      .when({ type: "SettleRow", row: 0, attempt: MAX_ATTEMPTS - 1, at: 51, outcome: retryLater(200) })
      .then(rowRetrying(0, MAX_ATTEMPTS - 1, 51, 200)))

  it(`a retryable failure of attempt ${MAX_ATTEMPTS} fails the row, which was the last one`, () =>
    given(created(1), batchStarted(5), ...retriedTimes(0, MAX_ATTEMPTS - 1), rowStarted(0, MAX_ATTEMPTS, 50))
      .when({ type: "SettleRow", row: 0, attempt: MAX_ATTEMPTS, at: 51, outcome: retryLater(200) })
      .then(rowFailed(0, MAX_ATTEMPTS, 51, rateLimited), batchCompleted(51)))

  it("a permanent failure fails the row at once", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5))
      .when({ type: "SettleRow", row: 0, attempt: 1, at: 8, outcome: rejected })
      .then(rowFailed(0, 1, 8, badRequest)))

  it("settling with a stale attempt number does nothing", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), rowRetrying(0, 1, 8, 20), rowStarted(0, 2, 20))
      .when({ type: "SettleRow", row: 0, attempt: 1, at: 21, outcome: ok })
      .thenNothingHappened())

  it("settling a row that is not running does nothing", () => {
    given(created(2), batchStarted(5), rowStarted(0, 1, 5))
      .when({ type: "SettleRow", row: 1, attempt: 1, at: 8, outcome: ok })
      .thenNothingHappened()
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), rowCompleted(0, 1, 8))
      .when({ type: "SettleRow", row: 0, attempt: 1, at: 9, outcome: rejected })
      .thenNothingHappened()
  })
})

describe("batch decider: cancelling", () => {
  it("cancelling with nothing running cancels every idle row and the batch at once", () =>
    given(created(3), batchStarted(5), rowStarted(0, 1, 5), rowCompleted(0, 1, 6), rowStarted(1, 1, 7), rowRetrying(1, 1, 8, 50))
      .when({ type: "Cancel", at: 9 })
      .then(batchCancelling(9, 2), batchCancelled(9)))

  it("cancelling a batch that never started cancels all its rows", () =>
    given(created(4)).when({ type: "Cancel", at: 9 }).then(batchCancelling(9, 4), batchCancelled(9)))

  it("cancelling with a row running cancels the idle rows and waits for it", () =>
    given(created(3), batchStarted(5), rowStarted(0, 1, 5)).when({ type: "Cancel", at: 9 }).then(batchCancelling(9, 2)))

  it("the last running row of a cancelling batch finishing cancels the batch", () =>
    given(created(3), batchStarted(5), rowStarted(0, 1, 5), batchCancelling(9, 2))
      .when({ type: "SettleRow", row: 0, attempt: 1, at: 12, outcome: ok })
      .then(rowCompleted(0, 1, 12), batchCancelled(12)))

  it("a row of a cancelling batch that fails for good keeps its failure", () =>
    given(created(3), batchStarted(5), rowStarted(0, 1, 5), rowStarted(1, 1, 5), batchCancelling(9, 1))
      .when({ type: "SettleRow", row: 0, attempt: 1, at: 12, outcome: rejected })
      .then(rowFailed(0, 1, 12, badRequest)))

  it("a retryable failure after cancel cancels the row instead of retrying it", () =>
    given(created(3), batchStarted(5), rowStarted(0, 1, 5), rowStarted(1, 1, 5), batchCancelling(9, 1))
      .when({ type: "SettleRow", row: 0, attempt: 1, at: 12, outcome: retryLater(100) })
      .then(rowCancelled(0, 1, 12, rateLimited)))

  it("cancelling a cancelling batch does nothing", () =>
    given(created(3), batchStarted(5), rowStarted(0, 1, 5), batchCancelling(9, 2)).when({ type: "Cancel", at: 10 }).thenNothingHappened())

  it("cancelling a final batch does nothing", () => {
    given(created(1), batchStarted(5), rowStarted(0, 1, 5), rowCompleted(0, 1, 6), batchCompleted(6))
      .when({ type: "Cancel", at: 10 })
      .thenNothingHappened()
    given(created(2), batchCancelling(5, 2), batchCancelled(5)).when({ type: "Cancel", at: 10 }).thenNothingHappened()
    given(created(2), batchFailed(5, 2)).when({ type: "Cancel", at: 10 }).thenNothingHappened()
    given(created(2), batchExpired(5, 2)).when({ type: "Cancel", at: 10 }).thenNothingHappened()
  })

  it("no row starts after cancel", () => {
    given(created(3), batchStarted(5), rowStarted(0, 1, 5), batchCancelling(9, 2)).when({ type: "StartRow", row: 1, at: 10 }).thenNothingHappened()
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), rowRetrying(0, 1, 6, 7), batchCancelling(9, 2), batchCancelled(9))
      .when({ type: "StartRow", row: 0, at: 10 })
      .thenNothingHappened()
  })
})

describe("batch decider: failing and expiring", () => {
  it("failing a batch with nothing running fails its idle rows and the batch at once, counted as failed", () => {
    const events = [created(3), batchStarted(5), rowStarted(0, 1, 5), rowRetrying(0, 1, 6, 50), batchFailed(9, 3)]
    given(...events.slice(0, -1)).when({ type: "Fail", at: 9, error: revoked }).then(batchFailed(9, 3))
    expect(replay(batch_id, events)).toMatchObject({ status: "failed", failed: 3, cancelled: 0, running: 0 })
  })

  it("failing a batch with a row running fails its idle rows and keeps its status until the row has finished", () => {
    const events = [created(3), batchStarted(5), rowStarted(0, 1, 5), rowRetrying(0, 1, 6, 50), rowStarted(1, 1, 7)]
    given(...events).when({ type: "Fail", at: 9, error: revoked }).then(batchFailing(9, 2))
    expect(replay(batch_id, [...events, batchFailing(9, 2)])).toMatchObject({
      status: "in_progress",
      closedAs: "failed",
      failed: 2,
      running: 1,
    })
    given(...events, batchFailing(9, 2))
      .when({ type: "SettleRow", row: 1, attempt: 1, at: 12, outcome: ok })
      .then(rowCompleted(1, 1, 12), { type: "batch_failed", batch_id, at: 12, error: revoked, failed_rows: 0 })
    expect(replay(batch_id, [...events, batchFailing(9, 2), rowCompleted(1, 1, 12), batchFailed(12, 0)])).toMatchObject({
      status: "failed",
      completed: 1,
      failed: 2,
      running: 0,
    })
  })

  it("expiring a batch with a row running expires its idle rows, lets the row finish, and is expired only then", () => {
    const events = [created(3), batchStarted(5), rowStarted(0, 1, 5), rowStarted(1, 1, 5), rowCompleted(1, 1, 6)]
    given(...events).when({ type: "Expire", at: 9 }).then(batchExpiring(9, 1))
    expect(replay(batch_id, [...events, batchExpiring(9, 1)])).toMatchObject({ status: "in_progress", completed: 1, failed: 1, running: 1 })
    given(...events, batchExpiring(9, 1))
      .when({ type: "SettleRow", row: 0, attempt: 1, at: 12, outcome: ok })
      .then(rowCompleted(0, 1, 12), batchExpired(12, 0))
  })

  it("a transient failure of a row still running after the batch began failing ends the row with its error", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), batchFailing(6, 1))
      .when({ type: "SettleRow", row: 0, attempt: 1, at: 8, outcome: retryLater(100) })
      .then(rowFailed(0, 1, 8, rateLimited), batchFailed(8, 0)))

  it("a row waiting for its retry counts as not started: it expires with the batch, and never starts again", () => {
    const events = [created(3), batchStarted(5), ...retriedTimes(0, 2), batchExpired(20, 3)]
    given(...events.slice(0, -1)).when({ type: "Expire", at: 20 }).then(batchExpired(20, 3))
    expect(replay(batch_id, events)).toMatchObject({ status: "expired", failed: 3, running: 0 })
    given(...events).when({ type: "StartRow", row: 0, at: 100 }).thenNothingHappened()
  })

  it("no row starts after the batch began failing or expiring, or failed or expired", () => {
    given(created(2), batchFailed(5, 2)).when({ type: "StartRow", row: 0, at: 6 }).thenNothingHappened()
    given(created(2), batchExpired(5, 2)).when({ type: "StartRow", row: 0, at: 6 }).thenNothingHappened()
    given(created(3), batchStarted(5), rowStarted(0, 1, 5), batchFailing(6, 2)).when({ type: "StartRow", row: 1, at: 7 }).thenNothingHappened()
    given(created(3), batchStarted(5), rowStarted(0, 1, 5), batchExpiring(6, 2)).when({ type: "StartRow", row: 1, at: 7 }).thenNothingHappened()
  })

  it("failing or expiring a closed batch does nothing", () => {
    given(created(2), batchExpired(5, 2)).when({ type: "Fail", at: 6, error: revoked }).thenNothingHappened()
    given(created(2), batchFailed(5, 2)).when({ type: "Expire", at: 6 }).thenNothingHappened()
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), batchCancelling(6, 1)).when({ type: "Expire", at: 7 }).thenNothingHappened()
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), batchFailing(6, 1)).when({ type: "Expire", at: 7 }).thenNothingHappened()
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), batchExpiring(6, 1)).when({ type: "Fail", at: 7, error: revoked }).thenNothingHappened()
  })

  it("reconciling a failing batch whose last row settled without its final event fails it", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), batchFailing(6, 1), rowCompleted(0, 1, 7))
      .when({ type: "Reconcile", at: 30 })
      .then({ type: "batch_failed", batch_id, at: 30, error: revoked, failed_rows: 0 }))
})

describe("batch state: what readers make of the log, whoever wrote it", () => {
  it("a row start after the batch closed is void: the closing settled that row", () => {
    const state = replay(batch_id, [created(2), batchStarted(5), rowStarted(0, 1, 5), batchFailing(6, 1), rowStarted(1, 1, 7)])
    expect(state).toMatchObject({ running: 1, failed: 1 })
    expect(state.rows.size).toBe(1)
  })

  it("a transient failure after the batch closed ends the row, as a failure or a cancellation", () => {
    expect(replay(batch_id, [created(2), batchStarted(5), rowStarted(0, 1, 5), batchFailing(6, 1), rowRetrying(0, 1, 7, 50)])).toMatchObject(
      { running: 0, failed: 2, status: "in_progress" },
    )
    expect(replay(batch_id, [created(2), batchStarted(5), rowStarted(0, 1, 5), batchCancelling(6, 1), rowRetrying(0, 1, 7, 50)])).toMatchObject(
      { running: 0, cancelled: 2, status: "cancelling" },
    )
  })

  it("a final event written while a row still ran makes the batch final once that row settles, not before", () => {
    const events = [created(3), batchStarted(5), rowStarted(0, 1, 5), batchFailed(6, 2)]
    expect(replay(batch_id, events)).toMatchObject({ status: "in_progress", closedAs: "failed", failed: 2, running: 1 })
    expect(replay(batch_id, [...events, rowCompleted(0, 1, 9)])).toMatchObject({ status: "failed", completed: 1, failed: 2, running: 0 })
    given(...events).when({ type: "SettleRow", row: 0, attempt: 1, at: 9, outcome: ok }).then(rowCompleted(0, 1, 9))
  })

  it("the rows a closing settles are counted from the state at its place in the log, not from its payload", () => {
    expect(replay(batch_id, [created(4), batchStarted(5), rowStarted(0, 1, 5), batchFailing(6, 99)])).toMatchObject({ failed: 3 })
    expect(replay(batch_id, [created(4), batchExpired(6, 0)])).toMatchObject({ status: "expired", failed: 4 })
    expect(replay(batch_id, [created(4), batchCancelling(6, 1), batchCancelled(6)])).toMatchObject({ status: "cancelled", cancelled: 4 })
  })

  it("after a final status nothing but its deletion changes the batch: a late row event, a second closing event", () => {
    const final = [created(2), batchStarted(5), rowStarted(0, 1, 5), rowCompleted(0, 1, 6), batchFailed(7, 1)]
    const before = replay(batch_id, final)
    for (const late of [rowStarted(1, 1, 8), rowCompleted(0, 1, 8), batchExpired(8, 1), batchCancelling(8, 1), batchCompleted(8), batchFailing(8, 0)]) {
      expect(replay(batch_id, [...final, late])).toEqual(before)
    }
    expect(replay(batch_id, [...final, batchDeleted(9)]).deleted).toBe(true)
  })

  it("a second closing of another kind is ignored; the first one's final event ends the batch", () => {
    const events = [created(3), batchStarted(5), rowStarted(0, 1, 5), batchFailing(6, 2), batchExpired(7, 0)]
    expect(replay(batch_id, events)).toMatchObject({ status: "in_progress", closedAs: "failed", failed: 2 })
    expect(replay(batch_id, [...events, rowCompleted(0, 1, 8), batchFailed(8, 0)])).toMatchObject({ status: "failed", failed: 2, completed: 1 })
  })
})

describe("batch decider: deleting", () => {
  it("deleting while a row runs is refused", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5)).when({ type: "Delete", at: 9 }).thenRejects("RowsStillRunning"))

  it("deleting a cancelling batch whose row still runs is refused", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), batchCancelling(6, 1)).when({ type: "Delete", at: 9 }).thenRejects("RowsStillRunning"))

  it("deleting with nothing running deletes the batch, whatever its status", () => {
    given(created(2)).when({ type: "Delete", at: 9 }).then(batchDeleted(9))
    given(created(2)).when({ type: "Delete", at: 9, reason: "retention" }).then(batchDeleted(9, "retention"))
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), rowRetrying(0, 1, 6, 50)).when({ type: "Delete", at: 9 }).then(batchDeleted(9))
    given(created(1), batchStarted(5), rowStarted(0, 1, 5), rowCompleted(0, 1, 6), batchCompleted(6)).when({ type: "Delete", at: 9 }).then(batchDeleted(9))
    given(created(2), batchCancelling(5, 2), batchCancelled(5)).when({ type: "Delete", at: 9 }).then(batchDeleted(9))
  })

  const everyCommand: ReadonlyArray<BatchCommand> = [
    { type: "StartRow", row: 0, at: 20 },
    { type: "SettleRow", row: 0, attempt: 1, at: 20, outcome: ok },
    { type: "InterruptRow", row: 0, at: 20 },
    { type: "Reconcile", at: 20 },
    { type: "Cancel", at: 20 },
    { type: "Fail", at: 20, error: revoked },
    { type: "Expire", at: 20 },
    { type: "Delete", at: 20 },
  ]

  it.each(everyCommand)("$type on a deleted batch is rejected as not found", (command) =>
    given(created(1), batchDeleted(9)).when(command).thenRejects("BatchNotFound"))

  it.each(everyCommand)("$type on a batch never created is rejected as not found", (command) =>
    given().when(command).thenRejects("BatchNotFound"))
})

describe("batch decider: recovering after a restart", () => {
  it("interrupting a running row queues it again with the lost attempt counted", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5))
      .when({ type: "InterruptRow", row: 0, at: 30 })
      .then(rowRetrying(0, 1, 30, 30, interrupted)))

  it("an interrupted row starts again as its next attempt", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), rowRetrying(0, 1, 30, 30, interrupted))
      .when({ type: "StartRow", row: 0, at: 31 })
      .then(rowStarted(0, 2, 31)))

  it(`interrupting attempt ${MAX_ATTEMPTS} fails the row`, () =>
    given(created(2), batchStarted(5), ...retriedTimes(0, MAX_ATTEMPTS - 1), rowStarted(0, MAX_ATTEMPTS, 50))
      .when({ type: "InterruptRow", row: 0, at: 60 })
      .then(rowFailed(0, MAX_ATTEMPTS, 60, interrupted)))

  it("interrupting a row of a cancelling batch cancels the row and then the batch", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), batchCancelling(6, 1))
      .when({ type: "InterruptRow", row: 0, at: 30 })
      .then(rowCancelled(0, 1, 30, interrupted), batchCancelled(30)))

  it("interrupting a row that is not running does nothing", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), rowRetrying(0, 1, 6, 50))
      .when({ type: "InterruptRow", row: 0, at: 30 })
      .thenNothingHappened())

  it("reconciling closes a batch whose rows all settled without its closing event", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), rowStarted(1, 1, 5), rowCompleted(0, 1, 6), rowFailed(1, 1, 7, badRequest))
      .when({ type: "Reconcile", at: 30 })
      .then(batchCompleted(30)))

  it("reconciling cancels a cancelling batch whose last row settled without the closing event", () =>
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), batchCancelling(6, 1), rowCompleted(0, 1, 7))
      .when({ type: "Reconcile", at: 30 })
      .then(batchCancelled(30)))

  it("reconciling a batch with work left does nothing", () => {
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), rowCompleted(0, 1, 6)).when({ type: "Reconcile", at: 30 }).thenNothingHappened()
    given(created(2), batchStarted(5), rowStarted(0, 1, 5), rowStarted(1, 1, 5), rowCompleted(0, 1, 6))
      .when({ type: "Reconcile", at: 30 })
      .thenNothingHappened()
    given(created(2)).when({ type: "Reconcile", at: 30 }).thenNothingHappened()
  })

  it("reconciling a final batch does nothing", () =>
    given(created(1), batchStarted(5), rowStarted(0, 1, 5), rowCompleted(0, 1, 6), batchCompleted(6))
      .when({ type: "Reconcile", at: 30 })
      .thenNothingHappened())
})
