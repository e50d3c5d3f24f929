import { Effect, Fiber } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { makeSeqWaiters } from "../../src/projections/seqWaiters.js"

/**
 * Waits on drawn sequences, interleaved with drawn advances: after every advance, exactly the waits
 * at or below the highest sequence reached so far have ended, whatever the order and repetitions.
 */
describe("seqWaiters", () => {
  it("ends a wait once its sequence is reached, and no other", async () => {
    const step = fc.oneof(
      fc.record({ wait: fc.integer({ min: 0, max: 40 }) }),
      fc.record({ advance: fc.integer({ min: 0, max: 40 }) }),
    )
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 10 }), fc.array(step, { maxLength: 60 }), async (initial, steps) => {
        await Effect.runPromise(
          Effect.gen(function* () {
            const waiters = makeSeqWaiters(initial)
            const waits: Array<{ seq: number; fiber: Fiber.RuntimeFiber<void> }> = []
            let reached = initial
            for (const s of steps) {
              if ("wait" in s) waits.push({ seq: s.wait, fiber: yield* Effect.fork(waiters.awaitSeq(s.wait)) })
              else {
                waiters.advance(s.advance)
                reached = Math.max(reached, s.advance)
              }
              yield* Effect.yieldNow()
              for (const w of waits) {
                const done = (yield* Fiber.poll(w.fiber))._tag === "Some"
                expect(done, `a wait on ${w.seq} with ${reached} reached`).toBe(w.seq <= reached)
              }
              expect(waiters.reached()).toBe(reached)
            }
            for (const w of waits) yield* Fiber.interrupt(w.fiber)
          }),
        )
      }),
      { numRuns: 200 },
    )
  })
})
