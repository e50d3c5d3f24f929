import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  type Owner,
  type OwnerAccount,
  Verdict,
  quotaUsedUp,
  quotaUsedUpMessage,
  verdict,
} from "../../src/domain/account/ownerVerdict.js"
import { DAY_MS, nextUtcMidnight, utcDay } from "../../src/domain/account/utcDay.js"

const NOW = Date.UTC(2026, 4, 5, 15, 30)
const account: OwnerAccount = { tier: "internal", status: "active", daily_quota_usd: 10, concurrency: 4 }
const owner: Owner = { account, key: { revoked: false, expires_at: null }, usedTodayUsd: 0, slotsInUse: 0 }
const tagOf = (o: Owner, now = NOW) => verdict(o, now)._tag

const time = fc.integer({ min: 0, max: 4_102_444_800_000 })
const quota = fc.option(fc.double({ min: 0, max: 1_000, noNaN: true }), { nil: null })
const concurrency = fc.option(fc.integer({ min: 1, max: 64 }), { nil: null })
const anyAccount = fc.record({
  tier: fc.constantFrom("internal" as const, "standard" as const),
  status: fc.constantFrom("active" as const, "suspended" as const, "deleted" as const),
  daily_quota_usd: quota,
  concurrency,
})
const anyOwner = (accounts: fc.Arbitrary<OwnerAccount> = anyAccount) =>
  fc.record({
    account: accounts,
    key: fc.record({ revoked: fc.boolean(), expires_at: fc.option(fc.integer({ min: 0, max: 4_102_444_800 }), { nil: null }) }),
    usedTodayUsd: fc.double({ min: 0, max: 2_000, noNaN: true }),
    slotsInUse: fc.nat(100),
  })
const validOwner = anyOwner(anyAccount.map((a) => ({ ...a, status: "active" as const }))).map((o) => ({
  ...o,
  key: { revoked: false, expires_at: null },
}))

describe("the UTC day", () => {
  it("examples", () => {
    expect(utcDay(0)).toBe(0)
    expect(utcDay(DAY_MS - 1)).toBe(0)
    expect(utcDay(DAY_MS)).toBe(1)
    expect(nextUtcMidnight(NOW)).toBe(Date.UTC(2026, 4, 6))
    expect(nextUtcMidnight(Date.UTC(2026, 4, 6))).toBe(Date.UTC(2026, 4, 7))
  })

  it("the next 00:00 UTC is the start of the following day, within a day after the time", () => {
    fc.assert(
      fc.property(time, (t) => {
        const next = nextUtcMidnight(t)
        expect(next).toBeGreaterThan(t)
        expect(next - t).toBeLessThanOrEqual(DAY_MS)
        expect(new Date(next).toISOString()).toMatch(/T00:00:00\.000Z$/)
        expect(utcDay(next)).toBe(utcDay(t) + 1)
        expect(utcDay(next - 1)).toBe(utcDay(t))
      }),
    )
  })
})

describe("the verdict for a batch row", () => {
  it("a valid internal owner under quota with a free slot runs", () => {
    expect(verdict(owner, NOW)).toEqual(Verdict.Run())
  })

  it.each([
    ["the key is revoked", { key: { revoked: true, expires_at: null } }, /revoked/],
    ["the key has expired", { key: { revoked: false, expires_at: NOW / 1000 } }, /expired/],
    ["the key is gone", { key: undefined }, /no longer exists/],
    ["the account is suspended", { account: { ...account, status: "suspended" as const } }, /suspended/],
    ["the account is deleted", { account: { ...account, status: "deleted" as const } }, /deleted/],
    ["the account is gone", { account: undefined }, /deleted/],
  ])("%s: the batch fails as owner_unauthorized", (_, change, message) => {
    const decided = verdict({ ...owner, ...change }, NOW)
    expect(decided._tag).toBe("FailBatch")
    if (decided._tag !== "FailBatch") return
    expect(decided.error.code).toBe("owner_unauthorized")
    expect(decided.error.message).toMatch(message)
  })

  it("a key expiring a second from now still runs", () => {
    expect(tagOf({ ...owner, key: { revoked: false, expires_at: NOW / 1000 + 1 } })).toBe("Run")
  })

  it("the quota used up pauses until the next 00:00 UTC", () => {
    expect(verdict({ ...owner, usedTodayUsd: 10 }, NOW)).toEqual(Verdict.Pause({ until: Date.UTC(2026, 4, 6) }))
    expect(tagOf({ ...owner, usedTodayUsd: 9.99 })).toBe("Run")
    expect(tagOf({ ...owner, account: { ...account, daily_quota_usd: 0 } })).toBe("Pause")
  })

  it("a standard account waits; a full account is full", () => {
    expect(tagOf({ ...owner, account: { ...account, tier: "standard" } })).toBe("Wait")
    expect(tagOf({ ...owner, slotsInUse: 4 })).toBe("Full")
    expect(tagOf({ ...owner, slotsInUse: 3 })).toBe("Run")
    expect(tagOf({ ...owner, slotsInUse: 1_000, account: { ...account, concurrency: null } })).toBe("Run")
  })

  it("a revoked or expired key always fails the batch, whatever the account, quota, usage and slots", () => {
    fc.assert(
      fc.property(anyOwner(), time, fc.boolean(), (o, now, revoke) => {
        const key = revoke ? { revoked: true, expires_at: o.key.expires_at } : { revoked: o.key.revoked, expires_at: Math.floor(now / 1000) }
        expect(tagOf({ ...o, key }, now)).toBe("FailBatch")
      }),
    )
  })

  it("a suspended or deleted account always fails the batch, whatever its key, quota, usage and slots", () => {
    fc.assert(
      fc.property(anyOwner(anyAccount.filter((a) => a.status !== "active")), time, (o, now) => {
        expect(tagOf(o, now)).toBe("FailBatch")
      }),
    )
  })

  it("usage below the quota, or no quota at all, never pauses", () => {
    fc.assert(
      fc.property(validOwner, time, (o, now) => {
        const under = o.account.daily_quota_usd === null || o.usedTodayUsd < o.account.daily_quota_usd
        fc.pre(under)
        expect(tagOf(o, now)).not.toBe("Pause")
      }),
    )
  })

  it("a valid owner whose quota is used up pauses until the next 00:00 UTC, whatever its tier and slots", () => {
    fc.assert(
      fc.property(validOwner, time, (o, now) => {
        fc.pre(quotaUsedUp(o.account.daily_quota_usd, o.usedTodayUsd))
        expect(verdict(o, now)).toEqual(Verdict.Pause({ until: nextUtcMidnight(now) }))
      }),
    )
  })

  it("a valid internal owner under quota runs exactly when a concurrent-request slot is free", () => {
    fc.assert(
      fc.property(validOwner, time, (o, now) => {
        fc.pre(o.account.tier === "internal" && !quotaUsedUp(o.account.daily_quota_usd, o.usedTodayUsd))
        const free = o.account.concurrency === null || o.slotsInUse < o.account.concurrency
        expect(tagOf(o, now)).toBe(free ? "Run" : "Full")
      }),
    )
  })

  it("the verdict depends on the time only through key expiry and the UTC day", () => {
    fc.assert(
      fc.property(validOwner, time, fc.integer({ min: 0, max: DAY_MS - 1 }), (o, now, later) => {
        const sameDay = utcDay(now) === utcDay(now + later)
        fc.pre(sameDay)
        expect(verdict(o, now + later)).toEqual(verdict(o, now))
      }),
    )
  })

  it("the quota message says the quota is used up until 00:00 UTC", () => {
    const message = quotaUsedUpMessage(2.5, 3.3, Date.UTC(2026, 4, 6))
    expect(message).toMatch(/daily quota/)
    expect(message).toMatch(/\$3\.30 of \$2\.50/)
    expect(message).toMatch(/00:00 UTC \(2026-05-06T00:00:00\.000Z\)/)
  })
})
