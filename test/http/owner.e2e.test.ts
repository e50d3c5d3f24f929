import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { nextUtcMidnight } from "../../src/domain/account/utcDay.js"
import { simDirective } from "../../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { chatRow, client } from "../support/client.js"
import { type InProcessSluice, startInProcessSluice } from "../support/inProcessSluice.js"

/*
 * The seed's "Checked against your key every time" and the owner's concurrent-request slots, through
 * the public HTTP API against the simulator; midnight UTC and key expiry come from the actors' TestClock.
 */
const INPUT_USD_PER_MTOK = 10_000
const OUTPUT_USD_PER_MTOK = 1_000_000

describe("the owner's key, account, quota and slots, checked before every row", () => {
  let sim: Simulator
  let wideSim: Simulator
  let sluice: InProcessSluice

  beforeAll(async () => {
    sim = await startSimulator()
    wideSim = await startSimulator()
    sluice = await startInProcessSluice({
      models: [
        { id: "glm-5.3-flash", upstream_url: sim.url, batch_concurrency: 1 },
        {
          id: "priced",
          upstream_url: sim.url,
          upstream_model: "qwen3.6-35b",
          batch_concurrency: 1,
          input_usd_per_mtok: INPUT_USD_PER_MTOK,
          output_usd_per_mtok: OUTPUT_USD_PER_MTOK,
        },
        { id: "wide", upstream_url: wideSim.url, upstream_model: "glm-5.3-flash", batch_concurrency: 8 },
      ],
    })
  })
  afterAll(async () => {
    await sluice?.stop()
    await sim?.close()
    await wideSim?.close()
  })

  const admin = () => client(sluice.url)
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
  const final = ["completed", "failed", "expired", "cancelled"]

  const newAccount = async (settings: object = {}) => {
    const id = `acct-${Math.random().toString(36).slice(2, 10)}`
    expect((await admin().admin("POST", "/admin/v1/accounts", { id, tier: "internal", ...settings })).status).toBe(200)
    return id
  }
  const newKey = async (accountId: string, expiresAt: number | null = null) => {
    const key = await admin().admin("POST", `/admin/v1/accounts/${accountId}/keys`, { expires_at: expiresAt })
    expect(key.status).toBe(200)
    return { id: key.body.id as string, api: client(sluice.url, key.body.key as string) }
  }
  const until = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const seen = await probe()
      if (seen !== undefined) return seen
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await sleep(20)
    }
  }
  const create = async (api: ReturnType<typeof client>, requests: ReadonlyArray<object>) => {
    const created = await api.call("POST", "/v1/batches", { requests })
    expect(created.status, created.text).toBe(200)
    return created.body.id as string
  }
  const rowRunning = (api: ReturnType<typeof client>, batchId: string, row = 0) =>
    until(`row ${row} of ${batchId} to run`, async () => ((await api.allResults(batchId))[row]?.status === "running" ? true : undefined))
  const slowAndQueued = (label: string) => [
    chatRow(`${label}-slow`, `${label} slow ${simDirective.latency(1500)}`),
    chatRow(`${label}-1`, `${label} one`),
    chatRow(`${label}-2`, `${label} two`),
    chatRow(`${label}-3`, `${label} three`),
  ]

  /** The running row finished with its result; the rows that had not started failed with batch_failed. */
  const expectFailedForOwner = async (api: ReturnType<typeof client>, batchId: string, message: RegExp) => {
    const batch = await api.waitFinal(batchId)
    expect(batch.status).toBe("failed")
    expect(batch.failed_at).toEqual(expect.any(Number))
    expect(batch.error).toEqual({ code: "owner_unauthorized", message: expect.stringMatching(message) })
    const done = await until("the running row to finish", async () => {
      const rows = await api.allResults(batchId)
      return rows[0].status === "running" ? undefined : rows
    })
    expect(done[0]).toMatchObject({ status: "completed", error: null })
    for (const row of done.slice(1)) {
      expect(row).toMatchObject({ status: "failed", response: null, error: { code: "batch_failed" } })
    }
    expect((await api.call("GET", `/v1/batches/${batchId}`)).body.request_counts).toEqual({ total: 4, completed: 1, failed: 3 })
  }

  describe("a batch fails when its owner is no longer valid; its running row finishes", () => {
    it("the key it was created with is revoked", async () => {
      const account = await newAccount()
      const creator = await newKey(account)
      const reader = await newKey(account)
      const batchId = await create(creator.api, slowAndQueued("revoked"))
      await rowRunning(reader.api, batchId)
      expect((await admin().admin("POST", `/admin/v1/keys/${creator.id}/revoke`)).status).toBe(200)
      const failed = await until("the batch to fail", async () => {
        const batch = (await reader.api.call("GET", `/v1/batches/${batchId}`)).body
        return batch.status === "failed" ? batch : undefined
      })
      // Failed only once its running first row has finished, which keeps its result.
      expect((await reader.api.allResults(batchId))[0].status).toBe("completed")
      expect(failed.error.code).toBe("owner_unauthorized")
      await expectFailedForOwner(reader.api, batchId, /revoked/)
    })

    it("the key it was created with expires", async () => {
      const account = await newAccount()
      const expiresAt = Math.floor((await sluice.now()) / 1000) + 60
      const creator = await newKey(account, expiresAt)
      const reader = await newKey(account)
      const batchId = await create(creator.api, slowAndQueued("expiring"))
      await rowRunning(reader.api, batchId)
      await sluice.adjust(61_000)
      expect((await creator.api.call("GET", "/v1/batches")).status).toBe(401)
      await expectFailedForOwner(reader.api, batchId, /expired/)
    })

    it("the account is suspended", async () => {
      const account = await newAccount()
      const { api } = await newKey(account)
      const received = sim.stats().received
      const answered = sim.stats().answered[200] ?? 0
      const batchId = await create(api, slowAndQueued("suspended"))
      await rowRunning(api, batchId)
      expect((await admin().admin("PATCH", `/admin/v1/accounts/${account}`, { status: "suspended" })).status).toBe(200)
      expect((await api.call("GET", `/v1/batches/${batchId}`)).status).toBe(401)
      // While suspended its keys answer 401: the slow row ends, and nothing else is sent upstream.
      await until("the slow row to be answered", async () => (sim.stats().answered[200] === answered + 1 ? true : undefined))
      await sleep(300)
      expect(sim.stats().received - received).toBe(1)
      expect((await admin().admin("PATCH", `/admin/v1/accounts/${account}`, { status: "active" })).status).toBe(200)
      await expectFailedForOwner(api, batchId, /suspended/)
      await sleep(200)
      expect(sim.stats().received - received).toBe(1)
    })
  })

  it("the daily quota used up: the batch pauses and every call answers 429 until 00:00 UTC, then it resumes", async () => {
    const account = await newAccount({ daily_quota_usd: 2.5 })
    const { api } = await newKey(account)
    const received = sim.stats().received
    const rows = Array.from({ length: 6 }, (_, i) =>
      chatRow(`q-${i}`, `costly ${i} ${simDirective.tokens(1)} ${simDirective.latency(100)}`, "priced"),
    )
    const batchId = await create(api, rows)

    const refused = await until("the quota to be used up", async () => {
      const answer = await api.call("GET", `/v1/batches/${batchId}`)
      return answer.status === 429 ? answer : undefined
    })
    expect(Object.keys(refused.body)).toEqual(["error"])
    expect(refused.body.error).toMatchObject({ type: "insufficient_quota", code: "insufficient_quota", param: null })
    expect(refused.body.error.message).toMatch(/daily quota/)
    expect(refused.body.error.message).toMatch(/00:00 UTC/)
    for (const [method, path, body] of [
      ["POST", "/v1/batches", { requests: [chatRow("more", "more", "priced")] }],
      ["GET", "/v1/batches", undefined],
      ["GET", `/v1/batches/${batchId}`, undefined],
      ["GET", `/v1/batches/${batchId}/results`, undefined],
      ["POST", `/v1/batches/${batchId}/cancel`, undefined],
      ["DELETE", `/v1/batches/${batchId}`, undefined],
    ] as const) {
      const answer = await api.call(method, path, body)
      expect(answer.status, `${method} ${path}`).toBe(429)
      expect(answer.body.error.type).toBe("insufficient_quota")
    }

    // Paused: nothing more starts, however the clock moves within the day.
    const paused = await until("the last paid row to end", async () => {
      const before = sim.stats().received
      await sleep(300)
      return sim.stats().inFlight === 0 && sim.stats().received === before ? before : undefined
    })
    expect(paused - received).toBeLessThan(rows.length)
    const toMidnight = nextUtcMidnight(await sluice.now()) - (await sluice.now())
    for (let i = 0; i < 3; i++) {
      await sluice.adjust(Math.floor(Math.min(10 * 60_000, toMidnight / 8)))
      await sleep(100)
      expect(sim.stats().received).toBe(paused)
      expect((await api.call("GET", "/v1/batches")).status).toBe(429)
    }

    await sluice.adjust(nextUtcMidnight(await sluice.now()) - (await sluice.now()) + 1_000)
    expect((await api.call("GET", "/v1/batches")).status).toBe(200)
    const batch = await api.waitFinal(batchId)
    expect(batch.status).toBe("completed")
    expect(batch.request_counts).toEqual({ total: 6, completed: 6, failed: 0 })
    const results = await api.allResults(batchId)
    const costs = results.map(({ response }) => {
      const usage = response.body.usage
      return (usage.prompt_tokens * INPUT_USD_PER_MTOK + usage.completion_tokens * OUTPUT_USD_PER_MTOK) / 1_000_000
    })
    expect(batch.cost_usd).toBeCloseTo(costs.reduce((a, b) => a + b, 0), 9)
    expect(sim.stats().received - received).toBe(rows.length)
  })

  it("an account that is no longer internal: its batches wait, can still be read, cancelled and deleted, and finish once it is again", async () => {
    const account = await newAccount()
    const { api } = await newKey(account)
    const bootstrap = client(sluice.url)
    const blocker = await create(bootstrap, [chatRow("blocker", `blocks the one slot ${simDirective.latency(1000)}`)])
    await rowRunning(bootstrap, blocker)
    // A row shows running once its start is stored, which can come before its request reaches the model.
    await until("the blocker to reach the model", async () => (sim.stats().inFlight === 1 ? true : undefined))
    const received = sim.stats().received
    const waiting = await create(api, [chatRow("w-1", "waits"), chatRow("w-2", "waits too")])
    const dropped = await create(api, [chatRow("d-1", "cancelled while waiting")])
    expect((await admin().admin("PATCH", `/admin/v1/accounts/${account}`, { tier: "standard" })).status).toBe(200)

    expect((await bootstrap.waitFinal(blocker)).status).toBe("completed")
    await sleep(300)
    expect(sim.stats().received).toBe(received)
    expect((await api.call("GET", `/v1/batches/${waiting}`)).body.status).toBe("validating")
    expect((await api.allResults(waiting)).map((r) => r.status)).toEqual(["queued", "queued"])
    const listed = await api.call("GET", "/v1/batches")
    expect(listed.body.data.map((b: { id: string }) => b.id)).toEqual([dropped, waiting])
    expect((await api.call("POST", `/v1/batches/${dropped}/cancel`)).body.status).toBe("cancelled")
    expect((await api.call("DELETE", `/v1/batches/${dropped}`)).status).toBe(200)
    expect((await api.call("POST", "/v1/batches", { requests: [chatRow("x", "x")] })).status).toBe(403)

    expect((await admin().admin("PATCH", `/admin/v1/accounts/${account}`, { tier: "internal" })).status).toBe(200)
    const done = await api.waitFinal(waiting)
    expect(done.status).toBe("completed")
    expect(done.request_counts).toEqual({ total: 2, completed: 2, failed: 0 })
    expect(sim.stats().received - received).toBe(2)
  })

  it("an account's concurrent-request slots bound its running rows, while another account's batch on the same model runs", async () => {
    const limited = await newKey(await newAccount({ concurrency: 2 }))
    const slowRows = (label: string, n: number, ms: number) =>
      Array.from({ length: n }, (_, i) => chatRow(`${label}-${i}`, `${label} ${i} ${simDirective.latency(ms)}`, "wide"))

    const alone = await create(limited.api, slowRows("alone", 10, 100))
    expect((await limited.api.waitFinal(alone)).request_counts).toEqual({ total: 10, completed: 10, failed: 0 })
    expect(wideSim.stats().maxInFlight).toBe(2)

    const other = await newKey(await newAccount())
    const mine = await create(limited.api, slowRows("mine", 10, 300))
    const theirs = await create(other.api, slowRows("theirs", 6, 300))
    // The other account's rows take the model's free slots at once: its batch ends long before this one.
    expect((await other.api.waitFinal(theirs)).request_counts).toEqual({ total: 6, completed: 6, failed: 0 })
    expect((await limited.api.call("GET", `/v1/batches/${mine}`)).body.status).toBe("in_progress")
    let mostRunning = 0
    for (;;) {
      const rows = await limited.api.allResults(mine)
      mostRunning = Math.max(mostRunning, rows.filter((r) => r.status === "running").length)
      const batch = (await limited.api.call("GET", `/v1/batches/${mine}`)).body
      if (final.includes(batch.status)) break
      await sleep(20)
    }
    expect(mostRunning).toBeLessThanOrEqual(2)
    expect((await limited.api.waitFinal(mine)).request_counts).toEqual({ total: 10, completed: 10, failed: 0 })
    expect(wideSim.stats().maxInFlight).toBeGreaterThan(2)
    expect(wideSim.stats().maxInFlight).toBeLessThanOrEqual(8)
  })
})
