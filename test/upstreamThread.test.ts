import { Effect, Exit, Scope } from "effect"
import http from "node:http"
import type { AddressInfo } from "node:net"
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

  it("does not send a call that reaches it after its notAfter (the lease it was started under lapsed): the upstream never sees it", async () => {
    const counted = await startSimulator({})
    try {
      const to = target(counted)
      const late = await new Promise<UpstreamOutcome>((resolve) => thread.send(to, body("too late"), resolve, undefined, Date.now() - 1))
      expect(late).toMatchObject({ _tag: "NetworkError", message: expect.stringMatching(/lease lapsed/) })
      const inTime = await new Promise<UpstreamOutcome>((resolve) => thread.send(to, body("in time"), resolve, undefined, Date.now() + 60_000))
      expect(inTime).toMatchObject({ _tag: "Response", status: 200 })
      expect(counted.stats().received).toBe(1)
    } finally {
      await counted.close()
    }
  })

  it("reads a 429's Retry-After into the outcome's retryAfterMs", async () => {
    const limited = await startSimulator({ faults: { rate429: 1, retryAfterSeconds: 7 } })
    try {
      const outcome = await call(target(limited), "too many")
      expect(outcome).toMatchObject({ _tag: "Response", status: 429, retryAfterMs: 7_000 })
      expect(outcome).not.toHaveProperty("retryAfter")
      const plain = await call(target(fast), "fine")
      expect(plain).not.toHaveProperty("retryAfterMs")
    } finally {
      await limited.close()
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

  it("sends each call with its target's credentials, path and body, and answers a non-JSON error as its text", async () => {
    const seen: Array<{ url: string | undefined; authorization: string | undefined; type: string | undefined; body: string }> = []
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        seen.push({ url: req.url, authorization: req.headers.authorization, type: req.headers["content-type"], body: Buffer.concat(chunks).toString() })
        res.writeHead(502, { "content-type": "text/plain" })
        res.end("bad gateway")
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    try {
      const port = (server.address() as AddressInfo).port
      const keyed = thread.target({ https: false, hostname: "127.0.0.1", port, path: "/v1/chat/completions", apiKey: "sk-test", maxSockets: 2 })
      const basic = thread.target({ https: false, hostname: "127.0.0.1", port, path: "/base/v1/chat/completions", auth: "user:pass", maxSockets: 2 })
      const plain = thread.target({ https: false, hostname: "127.0.0.1", port, path: "/v1/chat/completions", maxSockets: 2 })
      const outcomes = await Promise.all([
        call(keyed, "with a key"),
        call(basic, "with a password"),
        new Promise<UpstreamOutcome>((resolve) => thread.send(plain, body("embed me"), resolve, undefined, undefined, "/v1/embeddings")),
      ])
      expect(outcomes).toEqual(Array(3).fill({ _tag: "Response", status: 502, body: "bad gateway" }))
      expect(seen.sort((a, b) => a.body.localeCompare(b.body))).toEqual([
        { url: "/v1/embeddings", authorization: undefined, type: "application/json", body: body("embed me") },
        { url: "/v1/chat/completions", authorization: "Bearer sk-test", type: "application/json", body: body("with a key") },
        { url: "/base/v1/chat/completions", authorization: `Basic ${Buffer.from("user:pass").toString("base64")}`, type: "application/json", body: body("with a password") },
      ])
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it("answers a call to an upstream that refuses connections as a network error", async () => {
    const closed = await startSimulator({})
    const to = target(closed)
    await closed.close()
    const outcome = await call(to, "anyone there?")
    expect(outcome._tag).toBe("NetworkError")
  })
})

describe("the upstream thread's limit per target", () => {
  let scope: Scope.CloseableScope
  let thread: UpstreamThread
  const sims: Array<Simulator> = []

  beforeAll(async () => {
    scope = Effect.runSync(Scope.make())
    thread = await Effect.runPromise(Scope.extend(upstreamThread, scope))
  })
  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    for (const sim of sims) await sim.close()
  })

  const simulator = async (options: Parameters<typeof startSimulator>[0] = {}) => {
    const sim = await startSimulator(options)
    sims.push(sim)
    const url = new URL(sim.url)
    const to = thread.target({ https: false, hostname: url.hostname, port: Number(url.port), path: "/v1/chat/completions", maxSockets: 16 })
    return { sim, to }
  }
  const until = async (what: string, ready: () => boolean) => {
    for (let i = 0; i < 500; i++) {
      if (ready()) return
      await sleep(10)
    }
    throw new Error(`timed out waiting for ${what}`)
  }

  it("holds the calls beyond the limit and sends each one as an answer frees a slot", async () => {
    const { sim, to } = await simulator()
    thread.limit(to, 2)
    const heldStates = new Map<number, Array<boolean>>()
    const outcomes = await Promise.all(
      Array.from(
        { length: 6 },
        (_, i) =>
          new Promise<UpstreamOutcome>((resolve) => {
            const id = thread.send(to, body(`[sim:latency=30] question ${i}`), resolve, (held) => {
              heldStates.set(id, [...(heldStates.get(id) ?? []), held])
            })
          }),
      ),
    )
    expect(outcomes.map((o) => o._tag === "Response" && o.status)).toEqual([200, 200, 200, 200, 200, 200])
    expect(sim.stats().maxInFlight).toBe(2)
    // Four waited: each was reported held, then sent.
    expect([...heldStates.values()]).toEqual([[true, false], [true, false], [true, false], [true, false]])
  })

  it("never sends an aborted held call, and gives the slot of an aborted sent one to the next", async () => {
    const { sim, to } = await simulator({ faults: { hangRate: 1 } })
    thread.limit(to, 1)
    const answered: Array<string> = []
    const first = thread.send(to, body("first"), () => answered.push("first"))
    const second = thread.send(to, body("second"), () => answered.push("second"))
    await until("the first call to reach the model", () => sim.stats().inFlight === 1)
    thread.abort(second)
    thread.abort(first)
    await until("the model to let go of the first call", () => sim.stats().inFlight === 0)
    thread.send(to, body("third"), () => answered.push("third"))
    await until("the third call to reach the model", () => sim.stats().inFlight === 1)
    // The first and the third: the aborted held call never went out.
    expect(sim.stats().received).toBe(2)
    expect(answered).toEqual([])
  })

  // A process paused past its lease holds calls here; on resume the answers that were waiting free their
  // slots before the main thread learns the lease is gone.
  it("does not send a held call whose notAfter passed while it waited for a slot", async () => {
    const { sim, to } = await simulator()
    thread.limit(to, 1)
    const first = new Promise<UpstreamOutcome>((resolve) => thread.send(to, body("[sim:latency=300] first"), resolve))
    const late = new Promise<UpstreamOutcome>((resolve) => thread.send(to, body("second"), resolve, undefined, Date.now() + 100))
    expect(await first).toMatchObject({ _tag: "Response", status: 200 })
    expect(await late).toMatchObject({ _tag: "NetworkError", message: expect.stringMatching(/lease lapsed/) })
    expect(sim.stats().received).toBe(1)
  })

  it("holds new calls under a lowered limit and sends them when it is raised", async () => {
    const { sim, to } = await simulator({ faults: { hangRate: 1 } })
    thread.limit(to, 3)
    const ids = ["a", "b", "c"].map((name) => thread.send(to, body(name), () => undefined))
    await until("three calls at the model", () => sim.stats().inFlight === 3)
    thread.limit(to, 1)
    thread.abort(ids[0]!)
    await until("two calls at the model", () => sim.stats().inFlight === 2)
    const heldStates: Array<boolean> = []
    const late = thread.send(to, body("late"), () => undefined, (held) => heldStates.push(held))
    await until("the late call to be reported held", () => heldStates.length === 1)
    expect(sim.stats().received).toBe(3)
    thread.limit(to, 3)
    await until("the late call to reach the model", () => sim.stats().inFlight === 3)
    expect(heldStates).toEqual([true, false])
    for (const id of [ids[1]!, ids[2]!, late]) thread.abort(id)
  })
})
