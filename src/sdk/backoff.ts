export interface RetryPolicy {
  /** Retries after the first attempt. */
  readonly maxRetries: number
  /** The first retry's delay before jitter; each later one doubles it. */
  readonly baseDelayMs: number
  readonly maxDelayMs: number
  /** A server asking to wait longer than this is not retried: its error is thrown at once. */
  readonly maxRetryAfterMs: number
}

/** Told before each retry's wait, so a caller can say at once that the server is not answering. */
export interface RetryNotice {
  readonly method: string
  readonly url: string
  /** Why the last attempt failed: the connection's error or the server's answer. */
  readonly reason: string
  /** This retry's number, from 1, of at most `maxRetries`. */
  readonly retry: number
  readonly maxRetries: number
  readonly delayMs: number
}

export type OnRetry = (notice: RetryNotice) => void

export const defaultRetryPolicy: RetryPolicy = { maxRetries: 5, baseDelayMs: 500, maxDelayMs: 30_000, maxRetryAfterMs: 60_000 }

/** `Retry-After` as seconds or an HTTP date, in ms from `nowMs`; undefined when absent or unreadable. */
export const retryAfterMs = (header: string | null, nowMs: number): number | undefined => {
  if (header === null || header.trim() === "") return undefined
  const seconds = Number(header)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(header)
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs)
}

/**
 * The wait before retry number `retry` (0-based): exponential with equal jitter, so that clients
 * failing together spread out, and never sooner than the server's `Retry-After`.
 */
export const backoffDelayMs = (
  retry: number,
  policy: RetryPolicy,
  random: number,
  serverAskedMs: number | undefined,
): number => {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry)
  const jittered = ceiling / 2 + (random * ceiling) / 2
  return Math.max(jittered, serverAskedMs ?? 0)
}
