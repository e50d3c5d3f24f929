import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type UpstreamThread, upstreamThread } from "../src/actors/upstreamThread.js"
import type { UpstreamOutcome } from "../src/domain/upstream/UpstreamOutcome.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const body = (content: string) => JSON.stringify({ model: "glm-5.3-flash", messages: [{ role: "user", content }] })

/** The batch calls' thread, against the simulator as a real HTTP server. */
describe("the upstream thread", () => {
  let fast: Simulator
  let slow: Simulator
  let scope: Scope.CloseableScope
  let thread: UpstreamThread

  beforeAll(async () => {
    fast = await startSimulator({})
    // Every call hangs, holding its slot until the client goes away.
    slow = await startSimulator({ faults: { hangRate: 1 } })
    scope = Effect.runSync(Scope.make())
    thread = await Effect.runPromise(Scope.extend(upstreamThread, scope))
  })
  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await fast.close()
    await slow.close()
  })

  const target = (sim: Simulator) => {
    const url = new URL(sim.url)
    return thread.target({ https: false, hostname: url.hostname, port: Number(url.port), path: "/v1/chat/completions", maxSockets: 8 })
  }
  const call = (to: number, content: string) =>
    new Promise<UpstreamOutcome>((resolve) => thread.send(to, body(content), resolve))

  it("answers each call with its own completion, many at once", async () => {
    const to = target(fast)
    const outcomes = await Promise.all(Array.from({ length: 50 }, (_, i) => call(to, `question ${i}`)))
    for (const outcome of outcomes) {
      expect(outcome._tag).toBe("Response")
      if (outcome._tag !== "Response") continue
      expect(outcome.status).toBe(200)
      expect((outcome.body as { object: string }).object).toBe("chat.completion")
    }
  })

  it("destroys an aborted call's request and never answers it", async () => {
    const to = target(slow)
    let answered = false
    const id = thread.send(to, body("never mind"), () => (answered = true))
    while (slow.stats().inFlight === 0) await sleep(10)
    thread.abort(id)
    // The simulator lets go of a hanging call only when its connection closes.
    while (slow.stats().inFlight > 0) await sleep(10)
    await sleep(50)
    expect(answered).toBe(false)
  })

  it("ends the calls in flight as network errors when it stops, and the next call starts it again", async () => {
    const waiting = call(target(slow), "still thinking")
    while (slow.stats().inFlight === 0) await sleep(10)
    await thread.stop()
    const lost = await waiting
    expect(lost).toEqual({ _tag: "NetworkError", message: "The model server could not be reached: the upstream thread was stopped" })
    const again = await call(target(fast), "are you back?")
    expect(again._tag === "Response" && again.status).toBe(200)
  })

  it("answers a call to an upstream that refuses connections as a network error", async () => {
    const closed = await startSimulator({})
    const to = target(closed)
    await closed.close()
    const outcome = await call(to, "anyone there?")
    expect(outcome._tag).toBe("NetworkError")
  })
})
