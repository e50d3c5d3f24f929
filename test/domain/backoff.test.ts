import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { backoffDelayMs } from "../../src/domain/retry/backoff.js"
import { retryAfterMs } from "../../src/domain/retry/retryAfter.js"

const policy = fc.record({ baseMs: fc.integer({ min: 1, max: 5_000 }), maxMs: fc.integer({ min: 1, max: 120_000 }) })

describe("backoff, the server's and the SDK's", () => {
  it("waits between half the ceiling and the ceiling, the ceiling doubling from the base up to the cap", () => {
    fc.assert(
      fc.property(fc.nat(40), policy, fc.double({ min: 0, max: 1, noNaN: true }), (retry, backoff, random) => {
        const ceiling = Math.min(backoff.maxMs, backoff.baseMs * 2 ** retry)
        const wait = backoffDelayMs(retry, backoff, random)
        expect(wait).toBeGreaterThanOrEqual(Math.floor(ceiling / 2))
        expect(wait).toBeLessThanOrEqual(ceiling)
      }),
    )
  })

  it("never waits less than the server's Retry-After, even past the cap", () => {
    fc.assert(
      fc.property(fc.nat(40), policy, fc.double({ min: 0, max: 1, noNaN: true }), fc.nat(3_600_000), (retry, backoff, random, asked) => {
        expect(backoffDelayMs(retry, backoff, random, asked)).toBeGreaterThanOrEqual(asked)
      }),
    )
  })

  it("reads Retry-After as seconds or as an HTTP date, and nothing else", () => {
    const now = Date.parse("2026-12-01T00:00:00Z")
    expect(retryAfterMs("2", now)).toBe(2_000)
    expect(retryAfterMs("Tue, 01 Dec 2026 00:00:05 GMT", now)).toBe(5_000)
    expect(retryAfterMs("Mon, 30 Nov 2026 00:00:05 GMT", now)).toBe(0)
    expect(retryAfterMs("soon", now)).toBeUndefined()
    expect(retryAfterMs(" ", now)).toBeUndefined()
    expect(retryAfterMs(undefined, now)).toBeUndefined()
  })
})
