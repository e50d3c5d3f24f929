import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { classifyUpstream, upstreamErrorMessage } from "../../src/domain/upstream/classifyUpstream.js"
import { UpstreamClassification as C, UpstreamOutcome as O } from "../../src/domain/upstream/UpstreamOutcome.js"

const envelope = (message: string) => ({ error: { message, type: "invalid_request_error", param: null, code: null } })

const isRetried = (status: number) => status === 429 || (status >= 500 && status <= 599)

describe("classifyUpstream laws", () => {
  it("only timeouts, network errors, 429 and 5xx are retried", () => {
    fc.assert(
      fc.property(fc.integer({ min: 100, max: 599 }), fc.anything(), (status, body) => {
        const c = classifyUpstream(O.Response({ status, body }))
        expect(c._tag === "Retryable").toBe(isRetried(status))
      }),
    )
    expect(classifyUpstream(O.Timeout())._tag).toBe("Retryable")
    fc.assert(
      fc.property(fc.string(), (message) => {
        expect(classifyUpstream(O.NetworkError({ message }))._tag).toBe("Retryable")
      }),
    )
  })

  it("every 2xx is a success", () => {
    fc.assert(fc.property(fc.integer({ min: 200, max: 299 }), fc.anything(), (status, body) => {
      expect(classifyUpstream(O.Response({ status, body }))).toEqual(C.Success())
    }))
  })

  it("every 4xx but 429 fails at once with its own status", () => {
    fc.assert(
      fc.property(fc.integer({ min: 400, max: 499 }).filter((s) => s !== 429), (status) => {
        const c = classifyUpstream(O.Response({ status, body: null }))
        expect(c._tag).toBe("Permanent")
        if (c._tag === "Permanent") expect(c.status).toBe(status)
      }),
    )
  })

  it("the message of an OpenAI error envelope is carried over whatever the status", () => {
    fc.assert(
      fc.property(fc.integer({ min: 300, max: 599 }), fc.string({ minLength: 1, maxLength: 200 }), (status, message) => {
        const c = classifyUpstream(O.Response({ status, body: envelope(message) }))
        expect(c._tag === "Success" ? message : c.message).toBe(message)
      }),
    )
  })

  it("a Retry-After is passed on with a retryable response", () => {
    fc.assert(
      fc.property(fc.constantFrom(429, 500, 502, 503, 504), fc.nat(600_000), (status, retryAfterMs) => {
        const c = classifyUpstream(O.Response({ status, body: null, retryAfterMs }))
        expect(c._tag === "Retryable" && c.retryAfterMs).toBe(retryAfterMs)
      }),
    )
  })
})

describe("classifyUpstream codes", () => {
  it.each([
    [400, "invalid_request"],
    [422, "invalid_request"],
    [401, "forbidden"],
    [403, "forbidden"],
    [404, "model_not_found"],
    [408, "invalid_request"],
    [409, "invalid_request"],
    [413, "invalid_request"],
  ] as const)("HTTP %i fails at once as %s", (status, code) => {
    expect(classifyUpstream(O.Response({ status, body: envelope("bad") }))).toEqual(
      C.Permanent({ code, status, message: "bad" }),
    )
  })

  it.each([
    [429, "rate_limited"],
    [500, "upstream_error"],
    [502, "upstream_error"],
    [503, "service_unavailable"],
    [504, "timeout"],
    [599, "upstream_error"],
  ] as const)("HTTP %i is retried, ending as %s", (status, code) => {
    expect(classifyUpstream(O.Response({ status, body: envelope("busy") }))).toEqual(
      C.Retryable({ code, status, message: "busy" }),
    )
  })

  it("a timeout is retried, ending as timeout without a status", () => {
    expect(classifyUpstream(O.Timeout())).toEqual(C.Retryable({ code: "timeout", message: "The upstream request timed out" }))
  })

  it("a reset, refused or truncated connection is retried, ending as upstream_error without a status", () => {
    expect(classifyUpstream(O.NetworkError({ message: "ECONNRESET" }))).toEqual(
      C.Retryable({ code: "upstream_error", message: "The upstream connection failed: ECONNRESET" }),
    )
  })

  it("a 1xx or 3xx is a permanent upstream_error", () => {
    expect(classifyUpstream(O.Response({ status: 302, body: "" }))).toEqual(
      C.Permanent({ code: "upstream_error", status: 302, message: "The upstream answered HTTP 302" }),
    )
  })

  it("without an error envelope the message names the status", () => {
    expect(classifyUpstream(O.Response({ status: 502, body: "<html>Bad Gateway</html>" }))).toEqual(
      C.Retryable({ code: "upstream_error", status: 502, message: "The upstream answered HTTP 502" }),
    )
  })

  it("reads the looser error shapes some providers send", () => {
    expect(upstreamErrorMessage({ error: "overloaded" })).toBe("overloaded")
    expect(upstreamErrorMessage({ message: "quota" })).toBe("quota")
    expect(upstreamErrorMessage({ detail: "Not Found" })).toBe("Not Found")
    expect(upstreamErrorMessage({ error: { code: 1 } })).toBeUndefined()
    expect(upstreamErrorMessage(null)).toBeUndefined()
    expect(upstreamErrorMessage(envelope("x".repeat(5000)))?.length).toBe(2001)
  })
})
