import { backoffDelayMs as backoff } from "../domain/retry/backoff.js"

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

export { retryAfterMs } from "../domain/retry/retryAfter.js"

/** The wait before retry number `retry` (0-based), by the policy's base and cap. */
export const backoffDelayMs = (retry: number, policy: RetryPolicy, random: number, serverAskedMs: number | undefined): number =>
  backoff(retry, { baseMs: policy.baseDelayMs, maxMs: policy.maxDelayMs }, random, serverAskedMs)
