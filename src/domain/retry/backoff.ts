export interface Backoff {
  /** The first retry's ceiling; each later one doubles it. */
  readonly baseMs: number
  readonly maxMs: number
}

/**
 * The wait before retry number `retry` (0-based): exponential with equal jitter rather than full
 * jitter, so that callers failing together spread out and a retry never follows at once, and never
 * sooner than the server's own `Retry-After`, which wins over the cap since it is the server's word.
 */
export const backoffDelayMs = (retry: number, backoff: Backoff, random: number, retryAfterMs?: number): number => {
  const ceiling = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, Math.floor(retry)))
  const r = Number.isFinite(random) ? Math.min(Math.max(random, 0), 1) : 0
  const wait = Math.min(Math.floor(ceiling / 2 + (r * ceiling) / 2), ceiling)
  return retryAfterMs !== undefined && Number.isFinite(retryAfterMs) ? Math.max(wait, Math.ceil(retryAfterMs)) : wait
}
