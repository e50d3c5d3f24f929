/**
 * How many batch rows a model may run at once. Two things take slots away from its catalog
 * `batch_concurrency`: interactive requests in flight on the model (each one takes a slot), and
 * pushback from its upstream (AIMD: a 429 or 503 halves the model's concurrency, each calm second
 * gives one slot back). A model always keeps one slot, so no batch waits forever behind busy traffic.
 */

/** Answers to rows already sent when the concurrency was cut say nothing new: one cut per window. */
export const PUSHBACK_WINDOW_MS = 1_000
/** One slot comes back per this much time without pushback. */
export const RECOVERY_STEP_MS = 1_000

/** A model's pushback state: the concurrency it was last cut to, when, and when the upstream last pushed back. */
export interface Pushback {
  readonly ceiling: number
  readonly cutAt: number
  readonly lastAt: number
}

export const noPushback = (batchConcurrency: number): Pushback => ({
  ceiling: batchConcurrency,
  cutAt: Number.NEGATIVE_INFINITY,
  lastAt: Number.NEGATIVE_INFINITY,
})

/** The model's batch concurrency at `now`: its last cut plus one slot per whole calm step since, up to `batch_concurrency`. */
export const concurrencyAt = (pushback: Pushback, batchConcurrency: number, now: number): number => {
  const calm = Math.max(0, now - pushback.lastAt)
  return Math.max(1, Math.min(batchConcurrency, pushback.ceiling + Math.floor(calm / RECOVERY_STEP_MS)))
}

/** A 429 or 503 from the upstream (or a long queue there): halve the concurrency, at most once per window, never below 1. */
export const onPushback = (pushback: Pushback, batchConcurrency: number, now: number): Pushback => {
  if (now - pushback.cutAt < PUSHBACK_WINDOW_MS) return { ...pushback, lastAt: Math.max(pushback.lastAt, now) }
  return { ceiling: Math.max(1, Math.floor(concurrencyAt(pushback, batchConcurrency, now) / 2)), cutAt: now, lastAt: now }
}

/** Batch rows the model may start: its concurrency less the interactive requests in flight on it, never below 1. */
export const batchSlots = (concurrency: number, interactiveInFlight: number): number =>
  Math.max(1, concurrency - Math.max(0, interactiveInFlight))

/**
 * vLLM's `num_requests_waiting` counts requests the server has no room for yet. A queue as long as
 * the model's whole batch allotment is taken as pushback; shorter ones are the ordinary moment a new
 * request waits for the next scheduling step.
 */
export const queuePushesBack = (waiting: number, batchConcurrency: number): boolean => waiting >= batchConcurrency

/**
 * Rows a model may have started beyond its slots, held by the upstream thread until a slot frees. A
 * round of answers arrives at once; without rows in hand the freed slots would wait for the main
 * thread to decide the next rows. An eighth of the model's concurrency keeps them busy; a model with fewer than 8 slots holds none, so a started row waits at most a
 * fraction of a round for its slot.
 */
export const heldCalls = (batchConcurrency: number): number => Math.floor(batchConcurrency / 8)
