import { describe, expect, it } from "vitest"
import { SIM_MAX_MODEL_LEN } from "../../src/sim/Tokenize.js"
import { simDirective } from "../../src/sim/Directives.js"
import { chatRow } from "../support/client.js"
import { freePort } from "../support/ports.js"
import { withSluice } from "../support/withSluice.js"

/*
 * POST /v1/batches/estimate through the public API: a create's body, validated as a create, stored
 * nowhere, its prompt tokens from the simulator's own POST /tokenize.
 */
describe.each(["embedded", "nats"] as const)("estimate before submit on the %s event log", (backend) => {
  const f = withSluice({
    log: backend,
    inProcess: true,
    lifetime: "test",
    // A 429's Retry-After outlasts every test: a row answered so waits for its retry, queued.
    simulator: { models: ["priced", "other"], faults: { retryAfterSeconds: 40 * 86_400 } },
    models: async (url) => [
      { id: "priced", upstream_url: url, input_usd_per_mtok: 1, output_usd_per_mtok: 2, timeout_ms: 600_000 },
      { id: "other", upstream_url: url },
      // Nothing listens there: no tokenizer to ask.
      { id: "untokenized", upstream_url: `http://127.0.0.1:${await freePort()}/v1`, input_usd_per_mtok: 1 },
    ],
  })
  const api = (key?: string) => f.api(key)
  const start = (maxUnfinishedBatches = 10) => f.start({ config: { maxUnfinishedBatches } })
  const simTokens = async (body: object) => {
    const response = await fetch(`${f.sim.url.replace(/\/v1$/, "")}/tokenize`, { method: "POST", body: JSON.stringify(body) })
    expect(response.status).toBe(200)
    return ((await response.json()) as { count: number }).count
  }
  const ids = async () => ((await api().call("GET", "/v1/batches?limit=100")).body.data as Array<{ id: string }>).map((b) => b.id)

  it("counts each model's prompt tokens as the upstream's /tokenize does, with costs from the catalog's prices", async () => {
    await start()
    const rows = [
      chatRow("a", "Summarize the plot of Hamlet in two sentences.", "priced", { max_tokens: 7 }),
      chatRow("b", "Name three prime numbers, and say why each one is prime.", "priced"),
      { custom_id: "c", body: { model: "other", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }], max_completion_tokens: 50 } },
    ]
    const before = await ids()
    const answer = await api().call("POST", "/v1/batches/estimate", { requests: rows })
    expect(answer.status, answer.text).toBe(200)
    const [a, b, c] = await Promise.all(rows.map((r) => simTokens(r.body)))
    expect(answer.body).toMatchObject({ object: "batch.estimate", request_counts: { total: 3 }, tokens: "upstream", fits: { unfinished_batches: true, daily_quota: true } })
    const priced = answer.body.models.find((m: { model: string }) => m.model === "priced")
    const other = answer.body.models.find((m: { model: string }) => m.model === "other")
    expect(priced).toMatchObject({ requests: 2, prompt_tokens: a! + b!, max_completion_tokens: 7 + (SIM_MAX_MODEL_LEN - b!), tokens: "upstream", rows_ahead: 0 })
    expect(priced.cost_usd_min).toBeCloseTo((a! + b!) / 1e6, 6)
    expect(priced.cost_usd_max).toBeCloseTo((a! + b!) / 1e6 + (2 * (7 + SIM_MAX_MODEL_LEN - b!)) / 1e6, 6)
    expect(other).toMatchObject({ requests: 1, prompt_tokens: c, max_completion_tokens: 50, cost_usd_min: 0, cost_usd_max: 0 })
    expect(answer.body.cost_usd_max).toBeCloseTo(priced.cost_usd_max, 6)
    // No row has settled on these models yet: no rate to estimate from.
    expect(answer.body.estimated_completion_at).toBeNull()
    expect(await ids()).toEqual(before)
  })

  it("falls back to an approximate count when the upstream has no tokenizer, and says so", async () => {
    await start()
    const answer = await api().call("POST", "/v1/batches/estimate", { requests: [chatRow("x", "hello there, how are you today?", "untokenized")] })
    expect(answer.status, answer.text).toBe(200)
    expect(answer.body.tokens).toBe("approximate")
    expect(answer.body.models[0]).toMatchObject({ model: "untokenized", tokens: "approximate", max_completion_tokens: 4096 })
    // Eight words of text, with the framing of one message and its reply.
    expect(answer.body.models[0].prompt_tokens).toBeGreaterThanOrEqual(8 + 6)
    expect(answer.body.models[0].prompt_tokens).toBeLessThanOrEqual(12 + 6)
  })

  it("estimates a batch of the real size, 50,000 rows of one model, each row counted once", async () => {
    await start()
    const rows = Array.from({ length: 50_000 }, (_, i) => chatRow(`r${i}`, `row ${i} of a large estimate`, "untokenized", { max_tokens: 3 }))
    const answer = await api().call("POST", "/v1/batches/estimate", { requests: rows })
    expect(answer.status, answer.text).toBe(200)
    expect(answer.body.request_counts).toEqual({ total: 50_000 })
    expect(answer.body.models).toHaveLength(1)
    expect(answer.body.models[0]).toMatchObject({ model: "untokenized", requests: 50_000, max_completion_tokens: 150_000, tokens: "approximate" })
  })

  it("refuses a bad body exactly as a create does, and another tier or a wrong key likewise", async () => {
    await start()
    const before = await ids()
    for (const body of [{ requests: [] }, { requests: [chatRow("q", "x", "no-such-model")] }, { requests: [chatRow("q", "x", "priced", { temperature: "hot" })] }, "{"]) {
      const estimate = await api().call("POST", "/v1/batches/estimate", body)
      const create = await api().call("POST", "/v1/batches", body)
      expect(estimate.status).toBe(400)
      expect(estimate.body).toEqual(create.body)
    }
    expect((await f.api("sk-wrong").call("POST", "/v1/batches/estimate", { requests: [chatRow("q", "x", "priced")] })).status).toBe(401)
    await api().admin("POST", "/admin/v1/accounts", { id: `std-${backend}`, tier: "standard" })
    const stdKey = (await api().admin("POST", `/admin/v1/accounts/std-${backend}/keys`, {})).body.key
    expect((await f.api(stdKey).call("POST", "/v1/batches/estimate", { requests: [chatRow("q", "x", "priced")] })).status).toBe(403)
    expect(await ids()).toEqual(before)
  })

  it("says when a create would not fit the unfinished-batch limit or the daily quota", async () => {
    await start(1)
    const parked = await api().call("POST", "/v1/batches", { requests: [chatRow("h", `parked ${simDirective.status(429)}`, "priced")] })
    expect(parked.status).toBe(200)
    for (let i = 0; i < 500; i++) {
      const [row] = await api().allResults(parked.body.id)
      if (row.status === "queued" && row.error?.code === "rate_limited") break
      await new Promise((r) => setTimeout(r, 20))
    }
    const full = await api().call("POST", "/v1/batches/estimate", { requests: [chatRow("q", "x", "priced")] })
    expect(full.body.fits).toEqual({ unfinished_batches: false, daily_quota: true, priority: true })
    // The parked row is queued (before its attempt, or waiting for its retry): a batch of the same account takes turns with it.
    expect(full.body.models[0].rows_ahead).toBe(1)
    await api().admin("POST", "/admin/v1/accounts", { id: `quota-${backend}`, tier: "internal", daily_quota_usd: 0.00001 })
    const key = (await api().admin("POST", `/admin/v1/accounts/quota-${backend}/keys`, {})).body.key
    const big = await api(key).call("POST", "/v1/batches/estimate", { requests: [chatRow("q", "x".repeat(400), "priced", { max_tokens: 100 })] })
    expect(big.status, big.text).toBe(200)
    expect(big.body.fits).toEqual({ unfinished_batches: true, daily_quota: false, priority: true })
    // Another account's queued row: one turn of that account comes first.
    expect(big.body.models[0].rows_ahead).toBe(1)
  })
})
