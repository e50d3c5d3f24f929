import fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { IdempotencyEvent } from "../../src/domain/idempotency/events.js"
import { CLAIM_ABANDONED_MS, idempotencyVerdict, KEY_RETENTION_MS, parseIdempotencyKey } from "../../src/domain/idempotency/verdict.js"

const claimed = (at: number, body = "b1"): IdempotencyEvent => ({
  type: "idempotency_key_claimed",
  account_id: "a",
  body_sha256: body,
  batch_id: "batch_1",
  at,
})

describe("an idempotency key's verdict", () => {
  it("claims a key never seen, released, or older than 24 hours", () => {
    expect(idempotencyVerdict({ last: undefined, batchStored: false, bodySha256: "b1", now: 0 })._tag).toBe("Claim")
    const released: IdempotencyEvent = { type: "idempotency_key_released", account_id: "a", batch_id: "batch_1", at: 0 }
    expect(idempotencyVerdict({ last: released, batchStored: false, bodySha256: "b2", now: 1 })._tag).toBe("Claim")
    expect(idempotencyVerdict({ last: claimed(0), batchStored: true, bodySha256: "b2", now: KEY_RETENTION_MS })._tag).toBe("Claim")
  })
  it("replays a stored batch for the same body, refuses another body, and waits for a claim being stored", () => {
    expect(idempotencyVerdict({ last: claimed(0), batchStored: true, bodySha256: "b1", now: 5 })).toEqual({ _tag: "Replay", batchId: "batch_1" })
    expect(idempotencyVerdict({ last: claimed(0), batchStored: true, bodySha256: "b2", now: 5 })._tag).toBe("BodyDiffers")
    expect(idempotencyVerdict({ last: claimed(0), batchStored: false, bodySha256: "b1", now: 5 })._tag).toBe("InProgress")
    expect(idempotencyVerdict({ last: claimed(0), batchStored: false, bodySha256: "b2", now: 5 })._tag).toBe("BodyDiffers")
  })
  it("frees a claim whose create died before storing its batch", () => {
    expect(idempotencyVerdict({ last: claimed(0), batchStored: false, bodySha256: "b1", now: CLAIM_ABANDONED_MS })._tag).toBe("Claim")
  })
  it("within 24 hours a stored batch is never claimed again, whatever the body", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: KEY_RETENTION_MS - 1 }), fc.boolean(), (age, sameBody) => {
        const verdict = idempotencyVerdict({ last: claimed(0), batchStored: true, bodySha256: sameBody ? "b1" : "b2", now: age })
        expect(verdict._tag).toBe(sameBody ? "Replay" : "BodyDiffers")
      }),
    )
  })
})

describe("the Idempotency-Key header", () => {
  it("takes a token or a quoted string, and refuses empty, spaced or overlong keys", () => {
    expect(parseIdempotencyKey("8e03978e-40d5-43e8-bc93-6894a57f9324")).toEqual({ key: "8e03978e-40d5-43e8-bc93-6894a57f9324" })
    expect(parseIdempotencyKey('"a key \\"quoted\\""')).toEqual({ key: 'a key "quoted"' })
    for (const bad of ["", '""', "two words", "x".repeat(256), "caf\u00e9"]) expect(parseIdempotencyKey(bad)).toHaveProperty("refused")
  })
})
