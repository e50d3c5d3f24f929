import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { client } from "../support/client.js"
import { startGatedUpstream } from "../support/gatedUpstream.js"
import { type InProcessSluice, startInProcessSluice } from "../support/inProcessSluice.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"
import { BOOTSTRAP_KEY } from "../support/sluice.js"
import { waitFor } from "../support/waitFor.js"

/*
 * The flex tier through the public API: `service_tier: "flex"` waits for one of its model's batch slots
 * in its account's turn, answers when done, and answers 408 when no slot came free in its wait. The
 * upstream is the test's own (test/support/gatedUpstream.ts), with one batch slot on `one` and two on `two`.
 */

describe.each([
  { log: "the embedded log", nats: false },
  { log: "NATS JetStream", nats: true },
] as const)("the flex tier, on $log", ({ nats: onNats }) => {
  let nats: NatsServer | undefined
  let upstream: Awaited<ReturnType<typeof startGatedUpstream>>
  let sluice: InProcessSluice
  let openai: OpenAI
  const http = client(() => sluice.url)
  const api = http.call
  const chat = (model: string, content: string, extra: object = {}, init: { signal?: AbortSignal } = {}) =>
    fetch(`${sluice.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${BOOTSTRAP_KEY}` },
      body: JSON.stringify({ model, messages: [{ role: "user", content }], ...extra }),
      ...init,
    })
  /** The model's queue, as its actor counts it (the admin API's model states). */
  const queuedOn = (model: string, n: number) =>
    waitFor(`${n} request(s) queued on ${model}`, async () => {
      const states = await http.admin("GET", "/admin/v1/models")
      return states.body.data.find((m: { id: string }) => m.id === model)?.queued === n
    })
  const held = (text: string) => waitFor(`the upstream holds '${text}'`, () => upstream.isHeld(text))

  beforeAll(async () => {
    if (onNats) nats = await startNatsServer()
    upstream = await startGatedUpstream()
    sluice = await startInProcessSluice({
      ...(nats === undefined ? {} : { natsUrl: nats.url }),
      models: [
        { id: "one", upstream_url: upstream.url, upstream_model: "gated-upstream", batch_concurrency: 1, timeout_ms: 3_600_000 },
        { id: "two", upstream_url: upstream.url, upstream_model: "gated-upstream", batch_concurrency: 2, timeout_ms: 3_600_000 },
      ],
    })
    openai = new OpenAI({ apiKey: BOOTSTRAP_KEY, baseURL: `${sluice.url}/v1`, maxRetries: 0 })
  })
  afterAll(async () => {
    await sluice?.stop()
    await upstream?.close()
    await nats?.stop()
  })

  it("a flex chat completion on an idle model answers the model's completion marked flex; the tier fields never reach the upstream", async () => {
    const answer = await openai.chat.completions.create({ model: "one", messages: [{ role: "user", content: "flex hello" }], service_tier: "flex" })
    expect(answer.service_tier).toBe("flex")
    expect(answer.choices[0]!.message.content).toBe("echo: flex hello")
    const sent = upstream.bodies[upstream.arrived.indexOf("flex hello")]!
    expect(sent).not.toHaveProperty("service_tier")
    expect(sent).not.toHaveProperty("max_queue_wait_s")
    // It is not a response of the caller's.
    expect((await api("GET", "/v1/responses?limit=100")).body.data).toEqual([])
  })

  it("a flex Response answers completed with service_tier flex; another tier is served at once and echoed default", async () => {
    const response = await openai.responses.create({ model: "one", input: "flex response", service_tier: "flex" })
    expect(response).toMatchObject({ status: "completed", service_tier: "flex", background: false })
    expect(response.output_text).toBe("echo: flex response")
    const auto = (await (await chat("one", "auto tier", { service_tier: "auto" })).json()) as { service_tier: string }
    expect(auto.service_tier).toBe("default")
  })

  it("with every slot taken, a flex request that cannot start within max_queue_wait_s answers 408 with Retry-After and never runs", async () => {
    const blocker = chat("one", "hold flex-blocker", { service_tier: "flex" })
    await held("hold flex-blocker")
    const waiting = chat("one", "flex too late", { service_tier: "flex", max_queue_wait_s: 5 })
    await queuedOn("one", 1)
    await sluice.adjust(6_000)
    const late = await waiting
    expect(late.status).toBe(408)
    expect(Number(late.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    const body = (await late.json()) as { error: { code: string } }
    expect(body.error.code).toBe("flex_queue_timeout")
    upstream.release("hold flex-blocker")
    expect((await blocker).status).toBe(200)
    expect(upstream.arrived).not.toContain("flex too late")
  })

  it("a flex request whose client goes away before it starts is taken out of the queue and never runs", async () => {
    const blocker = chat("one", "hold gone-blocker", { service_tier: "flex" })
    await held("hold gone-blocker")
    const abort = new AbortController()
    const gone = chat("one", "flex gone", { service_tier: "flex" }, { signal: abort.signal }).catch((e: unknown) => e)
    await queuedOn("one", 1)
    abort.abort()
    await gone
    await queuedOn("one", 0)
    upstream.release("hold gone-blocker")
    expect((await blocker).status).toBe(200)
    // A request after it runs: had the gone one been left in the queue, it would have run first.
    expect((await chat("one", "flex after", { service_tier: "flex" })).status).toBe(200)
    expect(upstream.arrived).not.toContain("flex gone")
  })

  it("flex requests under a saturated model share its slots with a batch: never more calls than slots, and neither starves", async () => {
    const before = upstream.arrived.length
    upstream.resetMostAtOnce()
    const rows = Array.from({ length: 8 }, (_, i) => ({
      custom_id: `row-${i}`,
      method: "POST",
      url: "/v1/chat/completions",
      body: { model: "two", messages: [{ role: "user", content: `batch row ${i}` }] },
    }))
    const batch = await api("POST", "/v1/batches", { endpoint: "/v1/chat/completions", completion_window: "24h", requests: rows })
    expect(batch.status).toBe(200)
    const flexes = await Promise.all(Array.from({ length: 8 }, (_, i) => chat("two", `flex row ${i}`, { service_tier: "flex" })))
    for (const f of flexes) expect(f.status).toBe(200)
    const final = await http.waitFinal(batch.body.id)
    expect(final.request_counts).toMatchObject({ total: 8, completed: 8 })
    expect(upstream.mostAtOnce()).toBeLessThanOrEqual(2)
    const order = upstream.arrived.slice(before)
    const isFlex = order.map((t) => t.startsWith("flex row"))
    // Interleaved: a flex request ran before the batch's last row, and a batch row before the last flex request.
    expect(isFlex.indexOf(true)).toBeLessThan(isFlex.lastIndexOf(false))
    expect(isFlex.indexOf(false)).toBeLessThan(isFlex.lastIndexOf(true))
  })

  it("at shutdown a flex request still waiting for a slot is answered 503 with Retry-After and never runs; a running one is answered", async () => {
    const own = await startInProcessSluice({
      ...(nats === undefined ? {} : { natsUrl: nats.url }),
      // A model of its own: on NATS the other instance holds the leases of the models it shares.
      models: [{ id: "solo", upstream_url: upstream.url, upstream_model: "gated-upstream", batch_concurrency: 1, timeout_ms: 3_600_000 }],
    })
    const send = (content: string) =>
      fetch(`${own.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${BOOTSTRAP_KEY}`, connection: "close" },
        body: JSON.stringify({ model: "solo", messages: [{ role: "user", content }], service_tier: "flex" }),
      })
    const running = send("hold shutdown-running")
    await held("hold shutdown-running")
    const waiting = send("flex at shutdown")
    await waitFor("the flex request is queued", async () => {
      const states = await client(own.url).admin("GET", "/admin/v1/models")
      return states.body.data.find((m: { id: string }) => m.id === "solo")?.queued === 1
    })
    const stopped = own.stop()
    const answer = await waiting
    expect(answer.status).toBe(503)
    expect(Number(answer.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    upstream.release("hold shutdown-running")
    expect((await running).status).toBe(200)
    await stopped
    expect(upstream.arrived).not.toContain("flex at shutdown")
  })

  it("bad tier fields answer 400 naming them and run nothing", async () => {
    const count = upstream.arrived.length
    for (const [extra, param] of [
      [{ service_tier: "flex", max_queue_wait_s: 4 }, "max_queue_wait_s"],
      [{ service_tier: "flex", max_queue_wait_s: 301 }, "max_queue_wait_s"],
      [{ service_tier: "flex", stream: true }, "stream"],
    ] as const) {
      const answer = await chat("one", "never", extra)
      expect(answer.status).toBe(400)
      expect(((await answer.json()) as { error: { param: string } }).error.param).toBe(param)
    }
    const background = await api("POST", "/v1/responses", { model: "one", input: "never", background: true, max_queue_wait_s: 30 })
    expect(background.status).toBe(400)
    expect(background.body.error.param).toBe("max_queue_wait_s")
    expect(upstream.arrived.length).toBe(count)
  })
})
