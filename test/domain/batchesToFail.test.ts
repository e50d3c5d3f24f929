import fc from "fast-check"
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { batchesToFail } from "../../src/domain/account/batchesToFail.js"
import { type OwnerAccount, authorizedAccount } from "../../src/domain/account/ownerVerdict.js"

const NOW = Date.UTC(2026, 4, 5, 15, 30)
const active: OwnerAccount = { tier: "internal", status: "active", daily_quota_usd: null, concurrency: null }

describe("the open batches whose owner may no longer run them", () => {
  it("examples: a revoked or expired key fails its batches only; a suspended account fails them all", () => {
    const batches = [
      { id: "ok", key: { revoked: false, expires_at: null } },
      { id: "revoked", key: { revoked: true, expires_at: null } },
      { id: "expired", key: { revoked: false, expires_at: NOW / 1000 } },
      { id: "keyless", key: undefined },
    ]
    expect(batchesToFail(active, batches, NOW).map((b) => b.id)).toEqual(["revoked", "expired", "keyless"])
    expect(batchesToFail({ ...active, status: "suspended" }, batches, NOW).map((b) => b.id)).toEqual([
      "ok",
      "revoked",
      "expired",
      "keyless",
    ])
    expect(batchesToFail(active, batches, NOW)[0]?.error.message).toBe("The API key that created this batch has been revoked")
  })

  it("a batch fails exactly when its owner is not authorized, with the same reason", () => {
    const key = fc.option(fc.record({ revoked: fc.boolean(), expires_at: fc.option(fc.integer({ min: 0, max: 4_102_444_800 }), { nil: null }) }), { nil: undefined })
    const account = fc.option(
      fc.record({
        tier: fc.constantFrom("internal" as const, "standard" as const),
        status: fc.constantFrom("active" as const, "suspended" as const, "deleted" as const),
        daily_quota_usd: fc.constant(null),
        concurrency: fc.constant(null),
      }),
      { nil: undefined },
    )
    fc.assert(
      fc.property(account, fc.array(key, { maxLength: 8 }), fc.integer({ min: 0, max: 4_102_444_800_000 }), (owner, keys, now) => {
        const batches = keys.map((k, i) => ({ id: `b${i}`, key: k }))
        const failing = new Map(batchesToFail(owner, batches, now).map((f) => [f.id, f.error]))
        for (const batch of batches) {
          const authorized = authorizedAccount(owner, batch.key, now)
          expect(failing.get(batch.id)).toEqual(Either.isLeft(authorized) ? authorized.left : undefined)
        }
      }),
    )
  })
})
