import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { classifyUpstream } from "../../src/domain/upstream/classifyUpstream.js"
import {
  BASE_BACKOFF_MS,
  MAX_ATTEMPTS,
  MAX_BACKOFF_MS,
  backoffCeilingMs,
  backoffMs,
  shouldRetry,
} from "../../src/domain/upstream/retryPolicy.js"
import { UpstreamClassification as C, UpstreamOutcome as O } from "../../src/domain/upstream/UpstreamOutcome.js"

const attempt = fc.integer({ min: 1, max: 100 })
const random = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })
const retryAfter = fc.option(fc.nat(10 * MAX_BACKOFF_MS), { nil: undefined })

describe("retry policy laws", () => {
  it("backoff never exceeds the cap unless Retry-After asks for longer, and never undercuts Retry-After", () => {
    fc.assert(
      fc.property(attempt, random, retryAfter, (a, r, after) => {
        const wait = backoffMs(a, r, after)
        expect(wait).toBeLessThanOrEqual(Math.max(MAX_BACKOFF_MS, after ?? 0))
        expect(wait).toBeGreaterThanOrEqual(after ?? 0)
      }),
    )
  })

  it("backoff stays within the upper half of a ceiling that doubles from the base up to the cap", () => {
    fc.assert(
      fc.property(attempt, random, (a, r) => {
        const ceiling = Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** (a - 1))
        expect(backoffCeilingMs(a)).toBe(ceiling)
        const wait = backoffMs(a, r)
        expect(wait).toBeGreaterThanOrEqual(ceiling / 2)
        expect(wait).toBeLessThanOrEqual(ceiling)
        expect(Number.isInteger(wait)).toBe(true)
      }),
    )
  })

  it("backoff grows with the random draw and with the attempt", () => {
    fc.assert(
      fc.property(attempt, random, random, (a, r1, r2) => {
        const [lo, hi] = r1 <= r2 ? [r1, r2] : [r2, r1]
        expect(backoffMs(a, lo)).toBeLessThanOrEqual(backoffMs(a, hi))
        expect(backoffMs(a, lo)).toBeLessThanOrEqual(backoffMs(a + 1, lo))
      }),
    )
  })

  it("a retryable failure is retried until MAX_ATTEMPTS attempts in all, and no further", () => {
    fc.assert(
      fc.property(fc.constantFrom(O.Timeout(), O.Response({ status: 429, body: null }), O.Response({ status: 503, body: null })), (outcome) => {
        let attempts = 1
        while (shouldRetry(attempts, classifyUpstream(outcome))) attempts++
        expect(attempts).toBe(MAX_ATTEMPTS)
      }),
    )
  })

  it("success and permanent failures are never retried", () => {
    fc.assert(
      fc.property(attempt, fc.integer({ min: 200, max: 499 }).filter((s) => s !== 429), (a, status) => {
        expect(shouldRetry(a, classifyUpstream(O.Response({ status, body: null })))).toBe(false)
      }),
    )
  })
})

describe("retry policy examples", () => {
  it("allows eight attempts in all", () => {
    expect(MAX_ATTEMPTS).toBe(8)
    const busy = C.Retryable({ code: "rate_limited", status: 429, message: "slow down" })
    expect(shouldRetry(7, busy)).toBe(true)
    expect(shouldRetry(8, busy)).toBe(false)
  })

  it("waits between half and all of 1 s, 2 s, 4 s ... up to 60 s", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((a) => backoffMs(a, 0))).toEqual([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000])
    expect(backoffMs(1, 0.999999)).toBe(999)
    expect(backoffMs(8, 0.999999)).toBe(59_999)
  })

  it("honours a Retry-After longer than the backoff, rounded up to the millisecond", () => {
    expect(backoffMs(1, 0.5, 5_000.2)).toBe(5_001)
    expect(backoffMs(1, 0.5, 120_000)).toBe(120_000)
    expect(backoffMs(7, 0.5, 100)).toBe(45_000)
  })

  it("tolerates out-of-range inputs", () => {
    expect(backoffMs(0, 0)).toBe(500)
    expect(backoffMs(1, Number.NaN)).toBe(500)
    expect(backoffMs(1, 5)).toBe(1000)
    expect(backoffMs(1_000_000, 0.5)).toBe(45_000)
  })
})
