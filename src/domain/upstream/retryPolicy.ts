import { backoffDelayMs } from "../retry/backoff.js"
import type { UpstreamClassification } from "./UpstreamOutcome.js"

/** Attempts in all, the first included. */
export const MAX_ATTEMPTS = 8
export const BASE_BACKOFF_MS = 1_000
export const MAX_BACKOFF_MS = 60_000

/** The ceiling of the jitter window after the given failed attempt (1-based): doubling from the base up to the cap. */
export const backoffCeilingMs = (attempt: number): number =>
  Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** (Math.max(1, Math.floor(attempt)) - 1))

/** The wait before retrying a row after the given failed attempt (1-based). */
export const backoffMs = (attempt: number, random: number, retryAfterMs?: number): number =>
  backoffDelayMs(Math.max(1, Math.floor(attempt)) - 1, { baseMs: BASE_BACKOFF_MS, maxMs: MAX_BACKOFF_MS }, random, retryAfterMs)

/** Whether to run again after `attempt` attempts (1-based) ended with this classification. */
export const shouldRetry = (attempt: number, classification: UpstreamClassification): boolean =>
  classification._tag === "Retryable" && attempt < MAX_ATTEMPTS
