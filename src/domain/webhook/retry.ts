/** Deliveries are retried this long after the event, then given up. */
export const DELIVERY_WINDOW_MS = 3 * 24 * 60 * 60 * 1000
const FIRST_RETRY_MS = 5_000
const MAX_RETRY_MS = 60 * 60 * 1000

/**
 * When the attempt after attempt `attempt` (1-based) comes: 5 s, doubling, at most an hour apart,
 * with up to a fifth of jitter so that endpoints that fail together do not retry together; none
 * once three days have passed since the delivery began.
 */
export const nextAttemptAt = (firstAt: number, attempt: number, now: number, jitter: number): number | null => {
  const delay = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (attempt - 1)) * (1 + 0.2 * jitter)
  const at = now + delay
  return at - firstAt > DELIVERY_WINDOW_MS ? null : at
}
