import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type ModelSample, type ModelState, nextModelState } from "../../src/domain/waiting/modelState.js"
import { type AccountStanding, type Facts, type ModelFacts, type WaitingReason, WaitingReasons, waitingOn } from "../../src/domain/waiting/waitingOn.js"

const NOW = 1_750_000_000_000
const time = fc.integer({ min: NOW - 3_600_000, max: NOW + 60_000 })
const count = fc.nat({ max: 4 })

const state: fc.Arbitrary<ModelState> = fc.record(
  {
    full: fc.record({ since: time, inUse: fc.integer({ min: 1, max: 8 }), limit: fc.integer({ min: 1, max: 8 }) }),
    interactive: fc.record({ since: time, inFlight: fc.integer({ min: 1, max: 4 }), slots: fc.integer({ min: 1, max: 4 }) }),
    backgroundHeld: fc.record({ since: time }),
    pushback: fc.record({ since: time, concurrency: fc.integer({ min: 1, max: 4 }), of: fc.integer({ min: 4, max: 8 }), retryAfterS: fc.option(fc.nat({ max: 60 }), { nil: undefined }) }, { requiredKeys: ["since", "concurrency", "of"] }),
  },
  { requiredKeys: [] },
)
const model: fc.Arbitrary<ModelFacts> = fc.oneof(
  fc.record({ model: fc.constantFrom("m1", "m2"), _tag: fc.constant("Owned" as const), state }),
  fc.record({ model: fc.constantFrom("m1", "m2"), _tag: fc.constant("Unowned" as const), missingSince: time }),
)
const account: fc.Arbitrary<AccountStanding> = fc.oneof(
  fc.constant({ _tag: "Run" as const }),
  fc.constant({ _tag: "FailBatch" as const }),
  fc.constant({ _tag: "Wait" as const }),
  fc.record({ _tag: fc.constant("Pause" as const), until: fc.constant(NOW + 3_600_000) }),
  fc.record({ _tag: fc.constant("Full" as const), concurrency: fc.option(fc.integer({ min: 1, max: 4 }), { nil: null }) }),
)
const facts: fc.Arbitrary<Facts> = fc.record({
  work: fc.record({
    settling: fc.boolean(),
    queued: count,
    running: count,
    retrying: count,
    nextRetryAt: fc.option(time, { nil: undefined }),
    movedAt: time,
    background: fc.boolean(),
  }),
  account,
  models: fc.array(model, { minLength: 1, maxLength: 2 }),
  log: fc.option(fc.record({ since: time, why: fc.constant("timed out") }), { nil: undefined }),
  now: fc.constant(NOW),
})

/** Each reason's own condition, written apart from the decider's order. */
const holds = (f: Facts, reason: WaitingReason): boolean => {
  const { work } = f
  const asleep = work.queued === 0 && work.running === 0 && work.retrying > 0
  const waits = !work.settling && (work.queued > 0 || asleep) && f.account._tag !== "FailBatch"
  const owned = f.models.flatMap((m) => (m._tag === "Owned" ? [m.state] : []))
  const queuedWaits = waits && work.queued > 0
  switch (reason) {
    case "log_unavailable":
      return !work.settling && (work.queued > 0 || asleep) && f.log !== undefined
    case "lease_handover":
      return waits && f.models.some((m) => m._tag === "Unowned")
    case "access_revoked":
      return waits && f.account._tag === "Wait"
    case "daily_quota":
      return waits && f.account._tag === "Pause"
    case "account_slots":
      return waits && f.account._tag === "Full"
    case "retry_backoff":
      return waits && asleep
    case "upstream_backoff":
      return queuedWaits && owned.some((s) => s.full !== undefined && s.pushback !== undefined)
    case "giving_way_to_interactive":
      return queuedWaits && owned.some((s) => (work.background && s.backgroundHeld !== undefined) || (s.full !== undefined && s.interactive !== undefined))
    case "model_capacity":
      return queuedWaits && owned.some((s) => s.full !== undefined && s.full.inUse > work.running)
  }
}

describe("waiting_on", () => {
  it("is the first reason that holds, in the documented order (log, lease, access, quota, account slots, upstream, interactive, capacity, retry), else null", () => {
    fc.assert(
      fc.property(facts, (f) => {
        const expected = WaitingReasons.find((r) => holds(f, r)) ?? null
        expect(waitingOn(f)?.reason ?? null).toBe(expected)
      }),
      { numRuns: 2_000 },
    )
  })

  it("is null for final or closing work, and for work with nothing waiting to start (every unsettled row running, or some running while others sleep)", () => {
    fc.assert(
      fc.property(facts, (f) => {
        const nothingWaits = f.work.queued === 0 && (f.work.running > 0 || f.work.retrying === 0)
        if (f.work.settling || nothingWaits) expect(waitingOn(f)).toBeNull()
      }),
    )
  })

  it("its since is never in the future, never before the work last moved (unless that is in the future), and in whole seconds", () => {
    fc.assert(
      fc.property(facts, (f) => {
        const answer = waitingOn(f)
        if (answer === null) return
        expect(Number.isInteger(answer.since)).toBe(true)
        expect(answer.since).toBeLessThanOrEqual(Math.floor(f.now / 1000))
        expect(answer.since).toBeGreaterThanOrEqual(Math.floor(Math.min(f.now, f.work.movedAt) / 1000))
      }),
    )
  })

  it("carries the fields its reason promises: until for the quota, next_retry_at for retries, the upstream's Retry-After when it sent one, the model for a model's reason", () => {
    fc.assert(
      fc.property(facts, (f) => {
        const answer = waitingOn(f)
        if (answer === null) return
        expect(answer.until !== undefined).toBe(answer.reason === "daily_quota")
        expect(answer.next_retry_at !== undefined).toBe(answer.reason === "retry_backoff")
        if (answer.retry_after_s !== undefined) expect(answer.reason).toBe("upstream_backoff")
        const modelReasons: ReadonlyArray<WaitingReason> = ["lease_handover", "upstream_backoff", "giving_way_to_interactive", "model_capacity"]
        expect(answer.model !== undefined).toBe(modelReasons.includes(answer.reason))
        expect(answer.detail.length).toBeGreaterThan(0)
      }),
    )
  })

  it("a background batch gives way while interactive requests are in flight at the owner, even with free slots; a standard one does not", () => {
    const base: Facts = {
      work: { settling: false, queued: 3, running: 0, retrying: 0, nextRetryAt: undefined, movedAt: NOW - 5_000, background: true },
      account: { _tag: "Run" },
      models: [{ model: "m1", _tag: "Owned", state: { backgroundHeld: { since: NOW - 2_000 } } }],
      log: undefined,
      now: NOW,
    }
    expect(waitingOn(base)).toMatchObject({ reason: "giving_way_to_interactive", since: Math.floor((NOW - 2_000) / 1000), model: "m1" })
    expect(waitingOn({ ...base, work: { ...base.work, background: false } })).toBeNull()
  })

  it("a model whose every slot the batch holds itself runs it at full speed: no model_capacity", () => {
    const base: Facts = {
      work: { settling: false, queued: 3, running: 2, retrying: 0, nextRetryAt: undefined, movedAt: NOW - 5_000, background: false },
      account: { _tag: "Run" },
      models: [{ model: "m1", _tag: "Owned", state: { full: { since: NOW - 9_000, inUse: 2, limit: 2 } } }],
      log: undefined,
      now: NOW,
    }
    expect(waitingOn(base)).toBeNull()
    expect(waitingOn({ ...base, work: { ...base.work, running: 1 } })).toMatchObject({ reason: "model_capacity", since: Math.floor((NOW - 5_000) / 1000) })
  })
})

describe("a model's published state", () => {
  const sample: fc.Arbitrary<ModelSample> = fc.record(
    {
      full: fc.record({ inUse: count, limit: count }),
      interactive: fc.record({ inFlight: count, slots: count }),
      backgroundHeld: fc.boolean(),
      pushback: fc.record({ concurrency: count, of: count }),
    },
    { requiredKeys: [] },
  )

  it("keeps each fact's since while it is seen again round after round, starts it at the round it appears, and drops it when gone", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(sample, fc.nat({ max: 5_000 })), { minLength: 1, maxLength: 12 }), (rounds) => {
        let at = NOW
        let state: ModelState | undefined
        const began = new Map<string, number>()
        for (const [s, step] of rounds) {
          at += step
          state = nextModelState(state, s, at)
          for (const fact of ["full", "interactive", "backgroundHeld", "pushback"] as const) {
            const seen = fact === "backgroundHeld" ? s.backgroundHeld === true : s[fact] !== undefined
            if (!seen) {
              began.delete(fact)
              expect(state[fact]).toBeUndefined()
              continue
            }
            if (!began.has(fact)) began.set(fact, at)
            expect(state[fact]?.since).toBe(began.get(fact))
          }
        }
      }),
    )
  })
})
