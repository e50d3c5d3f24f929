import { Effect, Fiber, TestClock, TestContext } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { sharedNextCall, sharedNextRun } from "../../src/eventlog/sharedNextRun.js"

/**
 * Callers arrive at drawn instants; each run lasts a drawn time and answers its own number. A caller
 * must get the answer of the first run that started after it arrived (an older one, a head read before
 * a write it made, would break read-your-writes), runs never overlap, and there are never more runs
 * than callers. (TestClock wakes callers of one instant one after another, so they are not one moment.)
 */
describe("sharedNextRun", () => {
  it("answers each caller from a run that started after it arrived, one run at a time", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 30 }),
        fc.array(fc.integer({ min: 1, max: 20 }), { minLength: 1, maxLength: 30 }),
        async (arrivals, durations) => {
          const program = Effect.gen(function* () {
            let started = 0
            let running = 0
            let overlapped = false
            const run = Effect.gen(function* () {
              const n = ++started
              running++
              if (running > 1) overlapped = true
              yield* Effect.sleep(`${durations[(n - 1) % durations.length]!} millis`)
              running--
              return n
            })
            const shared = sharedNextRun(run)
            const callers = yield* Effect.forEach(arrivals, (at) =>
              Effect.fork(
                Effect.gen(function* () {
                  yield* Effect.sleep(`${at} millis`)
                  const before = started
                  const answer = yield* shared
                  return { before, answer }
                }),
              ),
            )
            yield* TestClock.adjust("10 seconds")
            const seen = yield* Effect.forEach(callers, Fiber.join)
            return { seen, started, overlapped }
          })
          const { seen, started, overlapped } = await Effect.runPromise(program.pipe(Effect.provide(TestContext.TestContext)))
          expect(overlapped).toBe(false)
          // Each caller gets the first run that starts after it arrived: never an older one, and never a
          // later one, so callers that arrive during one run all share the next.
          for (const { before, answer } of seen) expect(answer).toBe(before + 1)
          expect(started).toBeLessThanOrEqual(arrivals.length)
        },
      ),
      { numRuns: 300 },
    )
  })

  it("passes a run's failure to every caller that joined it, and a later caller gets a new run", async () => {
    const program = Effect.gen(function* () {
      let calls = 0
      const shared = sharedNextRun(
        Effect.suspend(() => {
          const n = ++calls
          return Effect.zipRight(Effect.sleep("10 millis"), n === 2 ? Effect.fail("away" as const) : Effect.succeed(n))
        }),
      )
      const first = yield* Effect.fork(shared)
      yield* TestClock.adjust("1 millis")
      // Both arrive while the first run is under way: they share the second, which fails.
      const joined = yield* Effect.forEach([1, 2], () => Effect.fork(Effect.either(shared)))
      yield* TestClock.adjust("30 millis")
      const later = yield* Effect.fork(shared)
      yield* TestClock.adjust("30 millis")
      return { first: yield* Fiber.join(first), joined: yield* Effect.forEach(joined, Fiber.join), later: yield* Fiber.join(later), calls }
    })
    const seen = await Effect.runPromise(program.pipe(Effect.provide(TestContext.TestContext)))
    expect(seen.first).toBe(1)
    expect(seen.joined.map((e) => e._tag)).toEqual(["Left", "Left"])
    expect(seen.later).toBe(3)
    expect(seen.calls).toBe(3)
  })
})

/**
 * The plain-promise form (the HTTP fronts'): steps of callers arriving together in one turn of the loop,
 * the run under way answering (or failing) or not, then the loop's microtasks run. Each caller must get
 * the outcome of the first run that started after it arrived, runs never overlap, and there are never
 * more runs than turns that had callers.
 */
describe("sharedNextCall", () => {
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

  it("answers each caller from a run that started after it arrived, one run at a time", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ callers: fc.integer({ min: 0, max: 3 }), end: fc.constantFrom("none", "answer", "fail") }), { minLength: 1, maxLength: 30 }),
        async (steps) => {
          let started = 0
          let running = 0
          let overlapped = false
          const pending: Array<{ readonly n: number; readonly resolve: (n: number) => void; readonly reject: (n: number) => void }> = []
          const shared = sharedNextCall(
            () =>
              new Promise<number>((resolve, reject) => {
                const n = ++started
                running++
                if (running > 1) overlapped = true
                pending.push({ n, resolve, reject })
              }),
          )
          const end = (how: "answer" | "fail") => {
            const run = pending.shift()
            if (run === undefined) return
            running--
            if (how === "answer") run.resolve(run.n)
            else run.reject(run.n)
          }
          const seen: Array<Promise<{ readonly before: number; readonly outcome: number }>> = []
          let turnsWithCallers = 0
          for (const step of steps) {
            if (step.callers > 0) turnsWithCallers++
            for (let i = 0; i < step.callers; i++) {
              const before = started
              seen.push(shared().then((n) => ({ before, outcome: n }), (n: number) => ({ before, outcome: n })))
            }
            if (step.end !== "none") end(step.end)
            await settle()
          }
          while (pending.length > 0) {
            end("answer")
            await settle()
          }
          expect(overlapped).toBe(false)
          for (const { before, outcome } of await Promise.all(seen)) expect(outcome).toBe(before + 1)
          expect(started).toBeLessThanOrEqual(turnsWithCallers)
        },
      ),
      { numRuns: 300 },
    )
  })

  it("passes a run that throws as it starts to its callers, and runs again for the next", async () => {
    let calls = 0
    const shared = sharedNextCall(() => {
      calls++
      if (calls === 1) throw new Error("away")
      return Promise.resolve(calls)
    })
    const first = await Promise.allSettled([shared(), shared()])
    expect(first.map((r) => r.status)).toEqual(["rejected", "rejected"])
    expect(await shared()).toBe(2)
  })
})
