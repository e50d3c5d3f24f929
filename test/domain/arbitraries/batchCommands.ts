import fc from "fast-check"
import type { BatchCommand, RowOutcome } from "../../../src/domain/batch/decide.js"
import type { BatchEvent } from "../../../src/domain/batch/events.js"
import { type BatchState, rowPhase } from "../../../src/domain/batch/state.js"
import { MAX_ATTEMPTS } from "../../../src/domain/upstream/retryPolicy.js"

export const batchId = "batch_prop"
export const createdAt = 1_700_000_000_000

export const batchCreated = (total: number): BatchEvent => ({
  type: "batch_created",
  batch_id: batchId,
  account_id: "acct_prop",
  key_id: "key_prop",
  created_at: createdAt,
  expires_at: createdAt + 86_400_000,
  completion_window: "24h",
  metadata: null,
  total,
  models: ["glm-5.3-flash"],
})

/** A fixed index (in range or not), or the n-th row the command can act on in the state it meets. */
export type RowRef = { readonly _tag: "Index"; readonly row: number } | { readonly _tag: "Live"; readonly pick: number }

/** The attempt the row is on when the step runs, or a fixed guess that is often stale. */
export type AttemptRef = { readonly _tag: "Current" } | { readonly _tag: "Fixed"; readonly attempt: number }

export type Step = { readonly dt: number } & (
  | { readonly type: "StartRow" | "InterruptRow"; readonly row: RowRef }
  | { readonly type: "SettleRow"; readonly row: RowRef; readonly attempt: AttemptRef; readonly outcome: RowOutcome }
  | { readonly type: "Reconcile" | "Cancel" | "Fail" | "Expire" | "Delete" }
)

export interface Scenario {
  readonly total: number
  readonly steps: ReadonlyArray<Step>
}

export const completed: fc.Arbitrary<RowOutcome> = fc.record({
  _tag: fc.constant("Completed" as const),
  response: fc.record({
    status_code: fc.constant(200),
    request_id: fc.constantFrom("req_a", "req_b"),
    body: fc.constant({ object: "chat.completion" }),
  }),
  costUsd: fc.integer({ min: 0, max: 5_000 }).map((micros) => micros / 1_000_000),
})

export const retryable: fc.Arbitrary<RowOutcome> = fc.record({
  _tag: fc.constant("Retryable" as const),
  error: fc.constantFrom(
    { code: "rate_limited", message: "Too many requests", status: 429 },
    { code: "timeout", message: "The upstream timed out", status: 504 },
    { code: "upstream_error", message: "Connection reset" },
  ),
  retryAt: fc.nat(60_000).map((wait) => createdAt + wait),
})

export const permanent: fc.Arbitrary<RowOutcome> = fc.record({
  _tag: fc.constant("Permanent" as const),
  error: fc.constantFrom(
    { code: "invalid_request", message: "Bad request", status: 400 },
    { code: "model_not_found", message: "Model not found", status: 404 },
  ),
})

/** `flakiness` weighs transient failures: high values drive rows through all their attempts. */
export const rowOutcome = (flakiness: number): fc.Arbitrary<RowOutcome> =>
  fc.oneof(
    { arbitrary: completed, weight: 2 },
    { arbitrary: retryable, weight: flakiness },
    { arbitrary: permanent, weight: 1 },
  )

const rowRef = (total: number): fc.Arbitrary<RowRef> =>
  fc.oneof(
    { arbitrary: fc.nat(1_000).map((pick): RowRef => ({ _tag: "Live", pick })), weight: 3 },
    { arbitrary: fc.nat(2).map((pick): RowRef => ({ _tag: "Live", pick })), weight: 3 },
    { arbitrary: fc.integer({ min: 0, max: total - 1 }).map((row): RowRef => ({ _tag: "Index", row })), weight: 3 },
    { arbitrary: fc.constantFrom(-1, total, total + 7).map((row): RowRef => ({ _tag: "Index", row })), weight: 1 },
  )

const attemptRef: fc.Arbitrary<AttemptRef> = fc.oneof(
  fc.constant<AttemptRef>({ _tag: "Current" }),
  fc.integer({ min: 1, max: MAX_ATTEMPTS + 1 }).map((attempt): AttemptRef => ({ _tag: "Fixed", attempt })),
)

const dt = fc.integer({ min: 1, max: 5_000 })

interface Mix {
  readonly total: number
  /** Weighs the commands that close or delete a batch, per mille of steps or so: 0 leaves the batch free to finish on its own. */
  readonly closing: number
  readonly flakiness: number
}

const step = ({ total, closing, flakiness }: Mix): fc.Arbitrary<Step> =>
  fc.oneof(
    { arbitrary: fc.record({ type: fc.constant("StartRow" as const), row: rowRef(total), dt }), weight: 300 },
    {
      arbitrary: fc.record({
        type: fc.constant("SettleRow" as const),
        row: rowRef(total),
        attempt: attemptRef,
        outcome: rowOutcome(flakiness),
        dt,
      }),
      weight: 400,
    },
    { arbitrary: fc.record({ type: fc.constant("InterruptRow" as const), row: rowRef(total), dt }), weight: 30 },
    { arbitrary: fc.record({ type: fc.constant("Reconcile" as const), dt }), weight: 20 },
    { arbitrary: fc.record({ type: fc.constant("Cancel" as const), dt }), weight: 2 * closing },
    { arbitrary: fc.record({ type: fc.constant("Fail" as const), dt }), weight: closing },
    { arbitrary: fc.record({ type: fc.constant("Expire" as const), dt }), weight: closing },
    { arbitrary: fc.record({ type: fc.constant("Delete" as const), dt }), weight: closing },
  )

export const scenario: fc.Arbitrary<Scenario> = fc
  .record({
    total: fc.integer({ min: 1, max: 30 }),
    closing: fc.constantFrom(0, 1, 4),
    flakiness: fc.constantFrom(3, 1, 12),
  })
  .chain((mix) =>
    fc.record({
      total: fc.constant(mix.total),
      steps: fc.array(step(mix), { maxLength: 200, size: "max" }),
    }),
  )

const rowsWhere = (state: BatchState, keep: (row: number) => boolean) =>
  Array.from({ length: state.total }, (_, row) => row).filter(keep)

/** The most-tried rows come first, and a small pick favours them, so that some rows use up all their attempts. */
const mostTriedFirst = (state: BatchState, rows: Array<number>) => {
  const tried = (row: number) => rowPhase(state, row)?.attempt ?? 0
  return rows.sort((a, b) => tried(b) - tried(a) || a - b)
}

const startable = (state: BatchState) =>
  mostTriedFirst(
    state,
    rowsWhere(state, (row) => {
      const phase = rowPhase(state, row)
      return phase === undefined || phase.status === "queued"
    }),
  )

const running = (state: BatchState) => mostTriedFirst(state, rowsWhere(state, (row) => rowPhase(state, row)?.status === "running"))

const resolveRow = (ref: RowRef, candidates: ReadonlyArray<number>, total: number): number => {
  if (ref._tag === "Index") return ref.row
  return candidates[ref.pick % candidates.length] ?? ref.pick % total
}

/** The concrete command a step stands for in the state it meets, at time `at`. */
export const commandFor = (step: Step, state: BatchState, at: number): BatchCommand => {
  switch (step.type) {
    case "StartRow":
      return { type: "StartRow", row: resolveRow(step.row, startable(state), state.total), at }
    case "InterruptRow":
      return { type: "InterruptRow", row: resolveRow(step.row, running(state), state.total), at }
    case "SettleRow": {
      const row = resolveRow(step.row, running(state), state.total)
      const attempt = step.attempt._tag === "Current" ? (rowPhase(state, row)?.attempt ?? 1) : step.attempt.attempt
      return { type: "SettleRow", row, attempt, at, outcome: step.outcome }
    }
    case "Fail":
      return { type: "Fail", at, error: { code: "owner_unauthorized", message: "The key that created this batch was revoked" } }
    case "Reconcile":
    case "Cancel":
    case "Expire":
    case "Delete":
      return { type: step.type, at }
  }
}

const anyRow = (total: number) => fc.integer({ min: -1, max: total })
const anyAttempt = fc.integer({ min: 1, max: MAX_ATTEMPTS + 1 })
const anyError = fc.constantFrom(
  { code: "rate_limited", message: "Too many requests", status: 429 },
  { code: "invalid_request", message: "Bad request", status: 400 },
)
const failure = { code: "owner_unauthorized", message: "The key that created this batch was revoked" }

/**
 * Any event a writer could append for this batch, from whatever view it had: rows in range or not,
 * stale or future attempts, closing and final events of every kind with any payload count.
 */
export const anyEvent = (total: number): fc.Arbitrary<BatchEvent> => {
  const at = fc.integer({ min: createdAt, max: createdAt + 10_000_000 })
  const ids = fc.record({ batch_id: fc.constant(batchId), row: anyRow(total), attempt: anyAttempt, at })
  const count = fc.nat(total + 2)
  return fc.oneof(
    ids.map((e): BatchEvent => ({ type: "row_started", ...e })),
    fc.record({ e: ids, error: anyError, retry_at: at }).map(({ e, error, retry_at }): BatchEvent => ({ type: "row_retrying", ...e, error, retry_at })),
    fc.record({ e: ids, cost: fc.nat(5_000) }).map(({ e, cost }): BatchEvent => ({
      type: "row_completed",
      ...e,
      response: { status_code: 200, request_id: "req_x", body: { object: "chat.completion" } },
      cost_usd: cost / 1_000_000,
    })),
    fc.record({ e: ids, error: anyError }).map(({ e, error }): BatchEvent => ({ type: "row_failed", ...e, error })),
    fc.record({ e: ids, error: fc.option(anyError, { nil: null }) }).map(({ e, error }): BatchEvent => ({ type: "row_cancelled", ...e, error })),
    fc.record({ at, n: count }).map(({ at, n }): BatchEvent => ({ type: "batch_cancelling", batch_id: batchId, at, cancelled_rows: n })),
    fc.record({ at, n: count }).map(({ at, n }): BatchEvent => ({ type: "batch_failing", batch_id: batchId, at, error: failure, failed_rows: n })),
    fc.record({ at, n: count }).map(({ at, n }): BatchEvent => ({ type: "batch_expiring", batch_id: batchId, at, expired_rows: n })),
    fc.record({ at, n: count }).map(({ at, n }): BatchEvent => ({ type: "batch_failed", batch_id: batchId, at, error: failure, failed_rows: n })),
    fc.record({ at, n: count }).map(({ at, n }): BatchEvent => ({ type: "batch_expired", batch_id: batchId, at, expired_rows: n })),
    at.map((at): BatchEvent => ({ type: "batch_cancelled", batch_id: batchId, at })),
    at.map((at): BatchEvent => ({ type: "batch_completed", batch_id: batchId, at })),
    at.map((at): BatchEvent => ({ type: "batch_started", batch_id: batchId, at })),
  )
}
