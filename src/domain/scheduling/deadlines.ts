/*
 * Every queued row must start by its batch's `expires_at` (a stream item's window). The turns do not
 * look at it; this decides when they must give way to earliest-deadline-first.
 */

/** Slack kept before a deadline for the rate's error and the time a start takes to reach the model. */
export const DEADLINE_MARGIN_MS = 30_000
/**
 * No row starts this close to its start-by time. The batch's expiry is written then by whichever
 * instance's timer fires, from the log, which does not yet hold a start still being appended by the
 * model's owner: a row started later than this would run and then count as never started.
 */
export const START_CUTOFF_MS = 500

/** Whether a row whose start-by time is `startBy` may still start at `now`. */
export const startsInTime = (startBy: number, now: number): boolean => now < startBy - START_CUTOFF_MS

/** How much slower than measured the model may turn out to be before a row is given up for lost. */
export const RATE_DOUBT = 1.25

/**
 * Whether the row with the earliest start-by time among those that may start could miss it: `queued`
 * rows wait on the model, and at `ratePerMs` (rows started per ms, as measured) the last of them, in
 * whatever order the turns take them, starts after it. The whole queue bounds that order, so when the
 * earliest is not at risk no row is; when it is, starting earliest-deadline-first until it no longer is
 * misses no deadline that any order could have kept (at the measured rate). Without a rate only a
 * deadline within the margin counts.
 */
export const deadlineAtRisk = (startBy: number, queued: number, now: number, ratePerMs: number | undefined): boolean => {
  if (!Number.isFinite(startBy)) return false
  const needs = ratePerMs !== undefined && ratePerMs > 0 ? (queued / ratePerMs) * RATE_DOUBT : 0
  return now + needs + DEADLINE_MARGIN_MS >= startBy
}
