import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  PUSHBACK_WINDOW_MS,
  type Pushback,
  RECOVERY_STEP_MS,
  batchSlots,
  concurrencyAt,
  noPushback,
  onPushback,
  queuePushesBack,
} from "../../src/domain/scheduling/batchSlots.js"

type Step = { readonly kind: "wait"; readonly ms: number } | { readonly kind: "pushback" }

const steps = fc.array(
  fc.oneof(fc.record({ kind: fc.constant("wait" as const), ms: fc.nat(3_000) }), fc.constant({ kind: "pushback" as const })),
  { maxLength: 60 },
)

/** A model's pushback state reached by a random history of waits and pushbacks, with the time it ends at. */
const history = fc
  .record({ batchConcurrency: fc.integer({ min: 1, max: 64 }), start: fc.nat(2 ** 40), steps })
  .map(({ batchConcurrency, start, steps }) => {
    let state: Pushback = noPushback(batchConcurrency)
    let now = start
    for (const step of steps) {
      if (step.kind === "wait") now += step.ms
      else state = onPushback(state, batchConcurrency, now)
    }
    return { batchConcurrency, state, now }
  })

describe("batch slots under interactive load and upstream pushback", () => {
  it("slots never exceed batch_concurrency and never drop below 1", () =>
    fc.assert(
      fc.property(history, fc.nat(1_000), ({ batchConcurrency, state, now }, interactive) => {
        const slots = batchSlots(concurrencyAt(state, batchConcurrency, now), interactive)
        expect(slots).toBeGreaterThanOrEqual(1)
        expect(slots).toBeLessThanOrEqual(batchConcurrency)
      }),
    ))

  it("more interactive load never gives more batch slots", () =>
    fc.assert(
      fc.property(history, fc.nat(100), fc.nat(100), ({ batchConcurrency, state, now }, a, b) => {
        const [fewer, more] = a <= b ? [a, b] : [b, a]
        const concurrency = concurrencyAt(state, batchConcurrency, now)
        expect(batchSlots(concurrency, more)).toBeLessThanOrEqual(batchSlots(concurrency, fewer))
      }),
    ))

  it("each interactive request in flight takes one batch slot until one is left", () =>
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.nat(100), (concurrency, interactive) => {
        expect(batchSlots(concurrency, interactive)).toBe(Math.max(1, concurrency - interactive))
      }),
    ))

  it("pushback never gives more slots, and outside the window it halves them (never below 1)", () =>
    fc.assert(
      fc.property(history, fc.nat(5_000), ({ batchConcurrency, state, now }, later) => {
        const at = now + later
        const before = concurrencyAt(state, batchConcurrency, at)
        const after = concurrencyAt(onPushback(state, batchConcurrency, at), batchConcurrency, at)
        expect(after).toBeLessThanOrEqual(before)
        if (at - state.cutAt >= PUSHBACK_WINDOW_MS) expect(after).toBe(Math.max(1, Math.floor(before / 2)))
      }),
    ))

  it("pushbacks within one window cut once", () =>
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 64 }),
        fc.array(fc.nat(PUSHBACK_WINDOW_MS - 1), { minLength: 1, maxLength: 20 }),
        (batchConcurrency, offsets) => {
          const t = 1_000_000
          let state = noPushback(batchConcurrency)
          for (const offset of [0, ...[...offsets].sort((x, y) => x - y)]) state = onPushback(state, batchConcurrency, t + offset)
          expect(state.ceiling).toBe(Math.max(1, Math.floor(batchConcurrency / 2)))
        },
      ),
    ))

  it("each calm second gives one slot back, up to batch_concurrency", () =>
    fc.assert(
      fc.property(history, fc.nat(100), ({ batchConcurrency, state }, seconds) => {
        if (state.lastAt === Number.NEGATIVE_INFINITY) return
        const at = state.lastAt + seconds * RECOVERY_STEP_MS
        expect(concurrencyAt(state, batchConcurrency, at)).toBe(Math.min(batchConcurrency, state.ceiling + seconds))
      }),
    ))

  it("time without pushback never takes slots away", () =>
    fc.assert(
      fc.property(history, fc.nat(10_000), fc.nat(10_000), ({ batchConcurrency, state, now }, a, b) => {
        expect(concurrencyAt(state, batchConcurrency, now + a + b)).toBeGreaterThanOrEqual(concurrencyAt(state, batchConcurrency, now + a))
      }),
    ))

  it("a model that never saw pushback runs its full batch_concurrency", () => {
    expect(concurrencyAt(noPushback(8), 8, 0)).toBe(8)
    expect(batchSlots(concurrencyAt(noPushback(4), 4, 0), 3)).toBe(1)
    expect(batchSlots(concurrencyAt(noPushback(4), 4, 0), 0)).toBe(4)
  })

  it("a waiting queue pushes back once it is as long as the model's batch_concurrency", () => {
    expect(queuePushesBack(0, 4)).toBe(false)
    expect(queuePushesBack(3, 4)).toBe(false)
    expect(queuePushesBack(4, 4)).toBe(true)
  })
})
