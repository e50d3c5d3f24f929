import type { UpstreamClassification } from "./UpstreamOutcome.js"

/** Attempts in all, the first included. */
export const MAX_ATTEMPTS = 8
export const BASE_BACKOFF_MS = 1_000
export const MAX_BACKOFF_MS = 60_000

/** The ceiling of the jitter window after the given failed attempt (1-based): doubling from the base up to the cap. */
export const backoffCeilingMs = (attempt: number): number =>
  Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** (Math.max(1, Math.floor(attempt)) - 1))

/**
 * The wait before retrying after the given failed attempt (1-based). Equal jitter rather than full jitter so that
 * a retry never follows at once; a Retry-After from the upstream wins over the cap, since it is the server's own word.
 */
export const backoffMs = (attempt: number, random: number, retryAfterMs?: number): number => {
  const ceiling = backoffCeilingMs(attempt)
  const r = Number.isFinite(random) ? Math.min(Math.max(random, 0), 1) : 0
  const jittered = Math.floor(ceiling / 2 + (r * ceiling) / 2)
  const wait = Math.min(jittered, ceiling)
  return retryAfterMs !== undefined && Number.isFinite(retryAfterMs) ? Math.max(wait, Math.ceil(retryAfterMs)) : wait
}

/** Whether to run again after `attempt` attempts (1-based) ended with this classification. */
export const shouldRetry = (attempt: number, classification: UpstreamClassification): boolean =>
  classification._tag === "Retryable" && attempt < MAX_ATTEMPTS
