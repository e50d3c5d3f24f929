import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { MAX_BACKOFF_MS } from "../../src/domain/upstream/retryPolicy.js"
import { rowOutcome } from "../../src/domain/upstream/rowOutcome.js"
import { UpstreamOutcome } from "../../src/domain/upstream/UpstreamOutcome.js"

const context = fc.record({
  attempt: fc.integer({ min: 1, max: 8 }),
  at: fc.integer({ min: 0, max: 4_000_000_000_000 }),
  random: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
  requestId: fc.string({ minLength: 1 }).map((s) => `req_${s}`),
})
const answer = fc.oneof(
  fc.record({ status: fc.integer({ min: 100, max: 599 }), body: fc.jsonValue(), retryAfterMs: fc.option(fc.nat({ max: 600_000 }), { nil: undefined }) }).map((r) =>
    UpstreamOutcome.Response(r.retryAfterMs === undefined ? { status: r.status, body: r.body } : { status: r.status, body: r.body, retryAfterMs: r.retryAfterMs }),
  ),
  fc.constant(UpstreamOutcome.Timeout()),
  fc.string().map((message) => UpstreamOutcome.NetworkError({ message })),
)

describe("an upstream answer's row outcome", () => {
  it("a 2xx completes with the body, the request id and the cost of its usage; 429, 5xx, timeouts and resets retry later; the rest fail for good", () => {
    fc.assert(
      fc.property(answer, context, (a, c) => {
        const usages: Array<unknown> = []
        const outcome = rowOutcome(a, { ...c, costOf: (usage) => (usages.push(usage), 0.25) })
        const status = a._tag === "Response" ? a.status : undefined
        if (status !== undefined && status >= 200 && status < 300) {
          expect(outcome).toEqual({ _tag: "Completed", response: { status_code: 200, request_id: c.requestId, body: a._tag === "Response" ? a.body : null }, costUsd: 0.25 })
          expect(usages).toEqual([(a._tag === "Response" ? (a.body as { usage?: unknown } | null)?.usage : undefined)])
        } else if (status === undefined || status === 429 || (status >= 500 && status < 600)) {
          expect(outcome._tag).toBe("Retryable")
          if (outcome._tag !== "Retryable") return
          expect(outcome.retryAt).toBeGreaterThanOrEqual(c.at)
          // The upstream's Retry-After is honoured when it asks for longer than the backoff's cap.
          const cap = Math.max(MAX_BACKOFF_MS, a._tag === "Response" ? (a.retryAfterMs ?? 0) : 0)
          expect(outcome.retryAt - c.at).toBeLessThanOrEqual(cap)
          expect(outcome.error.status).toBe(status)
        } else {
          expect(outcome._tag).toBe("Permanent")
          if (outcome._tag === "Permanent") expect(outcome.error.status).toBe(status)
        }
      }),
    )
  })
})
