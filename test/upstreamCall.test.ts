import { Effect, Fiber, type Scope, TestClock, TestContext } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeUpstreamCaller } from "../src/actors/upstreamCall.js"
import type { ModelEntry } from "../src/config/Catalog.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const body = (content: string) => JSON.stringify({ model: "glm-5.3-flash", messages: [{ role: "user", content }] })
const TIMEOUT_MS = 60_000

/** A model's calls against the simulator, their timeouts on a TestClock. */
describe("the upstream calls of a model with held calls", () => {
  let sim: Simulator
  beforeAll(async () => {
    sim = await startSimulator({})
  })
  afterAll(() => sim.close())

  const model = (): ModelEntry => ({
    id: "glm-5.3-flash",
    upstreamUrl: sim.url,
    upstreamModel: "glm-5.3-flash",
    batchConcurrency: 8,
    inputUsdPerMtok: 0,
    outputUsdPerMtok: 0,
    timeoutMs: TIMEOUT_MS,
    apiKey: undefined,
    endpoints: ["/v1/chat/completions", "/v1/responses"],
  })
  const until = (what: string, ready: () => boolean) =>
    Effect.promise(async () => {
      for (let i = 0; i < 500; i++) {
        if (ready()) return
        await sleep(10)
      }
      throw new Error(`timed out waiting for ${what}`)
    })

  /** Two calls on one slot: the first at the model, the second held in the upstream thread. */
  const oneSlot = (first: string, second: string) =>
    Effect.gen(function* () {
      const upstream = yield* makeUpstreamCaller(model())
      upstream.limit(1)
      const sent = yield* Effect.fork(upstream.call(body(first)))
      const held = yield* Effect.fork(upstream.call(body(second)))
      yield* until("the second call to be held", () => upstream.held() === 1)
      return { upstream, sent, held }
    })
  const onTestClock = <A, E>(test: Effect.Effect<A, E, Scope.Scope>) =>
    test.pipe(Effect.scoped, Effect.provide(TestContext.TestContext), Effect.runPromise)

  it("times a held call from when it is sent, not from when it was made", () =>
    onTestClock(Effect.gen(function* () {
      const { sent: hung, held: next } = yield* oneSlot("[sim:hang] take your time", "and then me")
      // Most of a timeout passes while the second call waits; the first then runs out of time.
      yield* TestClock.adjust(TIMEOUT_MS - 1_000)
      yield* TestClock.adjust(1_000)
      expect(yield* Fiber.join(hung)).toEqual({ _tag: "Timeout" })
      const answered = yield* Fiber.join(next)
      expect(answered._tag === "Response" && answered.status).toBe(200)
    })))

  it("times out a held call once it has been sent and has taken the whole timeout", () =>
    onTestClock(Effect.gen(function* () {
      const { upstream, sent: first, held: second } = yield* oneSlot("[sim:hang] first", "[sim:hang] second")
      yield* TestClock.adjust(TIMEOUT_MS)
      expect(yield* Fiber.join(first)).toEqual({ _tag: "Timeout" })
      yield* until("the second call to be sent", () => upstream.held() === 0)
      yield* TestClock.adjust(TIMEOUT_MS)
      expect(yield* Fiber.join(second)).toEqual({ _tag: "Timeout" })
    })))
})
