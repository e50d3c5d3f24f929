import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { DEFAULT_FLEX_WAIT_S, flexAsk } from "../../src/domain/response/flexTier.js"

describe("a request's tier", () => {
  it("is flex only for service_tier flex, waiting the default unless it says", () => {
    expect(flexAsk({ service_tier: "flex" })).toEqual({ _tag: "Flex", maxWaitMs: DEFAULT_FLEX_WAIT_S * 1000 })
    expect(flexAsk({ service_tier: "flex", max_queue_wait_s: 5 })).toEqual({ _tag: "Flex", maxWaitMs: 5000 })
    for (const tier of ["auto", "default", "scale", "priority", undefined, null]) expect(flexAsk({ service_tier: tier })._tag).toBe("Interactive")
  })

  it("refuses, naming max_queue_wait_s, any wait that is not a whole number of seconds from 5 to 300", () =>
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ max: 4 }), fc.integer({ min: 301 }), fc.double({ noInteger: true }), fc.string(), fc.boolean()),
        (wait) => {
          const ask = flexAsk({ service_tier: "flex", max_queue_wait_s: wait })
          expect(ask._tag).toBe("Refused")
          if (ask._tag === "Refused") expect(ask.param).toBe("max_queue_wait_s")
        },
      ),
    ))

  it("takes every whole wait from 5 to 300", () =>
    fc.assert(
      fc.property(fc.integer({ min: 5, max: 300 }), (wait) => {
        expect(flexAsk({ service_tier: "flex", max_queue_wait_s: wait })).toEqual({ _tag: "Flex", maxWaitMs: wait * 1000 })
      }),
    ))

  it("refuses a wait on a background request and a streamed flex request", () => {
    expect(flexAsk({ background: true, max_queue_wait_s: 30 })).toMatchObject({ _tag: "Refused", param: "max_queue_wait_s" })
    expect(flexAsk({ service_tier: "flex", stream: true })).toMatchObject({ _tag: "Refused", param: "stream" })
  })
})
