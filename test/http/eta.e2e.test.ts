import { describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { chatRow } from "../support/client.js"
import { withSluice } from "../support/withSluice.js"

/*
 * A batch object's `rows_ahead` and `estimated_completion_at`, through the public API, Sluice as a
 * process on the wall clock (the rate is measured from rows settling in real time).
 */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.each(["embedded", "nats"] as const)("queue position and ETA on the %s event log", (backend) => {
  // Held rows hang until the process ends: each test's Sluice is killed, not left to wait for them.
  const f = withSluice({
    log: backend,
    lifetime: "test",
    teardown: "kill",
    simulator: { models: ["held", "paced"], latencyMs: 20 },
    models: (url) => [
      { id: "held", upstream_url: url, batch_concurrency: 1, timeout_ms: 600_000 },
      { id: "paced", upstream_url: url, batch_concurrency: 2, timeout_ms: 600_000 },
    ],
  })
  const api = (key?: string) => f.api(key)
  const start = () => f.start()
  const create = async (rows: ReadonlyArray<object>, key?: string) => {
    const created = await api(key).call("POST", "/v1/batches", { requests: rows })
    expect(created.status, created.text).toBe(200)
    return created.body.id as string
  }
  const read = async (id: string, key?: string) => (await api(key).call("GET", `/v1/batches/${id}`)).body
  const held = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => chatRow(`${prefix}-${i}`, `${prefix} ${i} ${simDirective.hang}`, "held"))

  it("counts the rows of other batches the turns start first: accounts take turns, then an account's batches", async () => {
    await start()
    const account = await api().admin("POST", "/admin/v1/accounts", { id: `other-${backend}`, tier: "internal" })
    expect(account.status, account.text).toBe(200)
    const otherKey = (await api().admin("POST", `/admin/v1/accounts/other-${backend}/keys`, {})).body.key as string
    // The model's one slot is held by A's first row for the whole test: nothing else starts.
    const a = await create(held("a", 5))
    for (let i = 0; i < 200; i++) {
      if ((await api().allResults(a)).some((r) => r.status === "running")) break
      await sleep(20)
    }
    const b = await create(held("b", 3), otherKey)
    const c = await create(held("c", 2))
    // A: 4 queued; C (same account) starts min(2, 4), so the account needs 6 turns; B's account starts min(3, 6).
    expect((await read(a)).rows_ahead).toBe(2 + 3)
    // B: 3 queued; the bootstrap account starts at most one row per B's turn: min(4 + 2, 3).
    expect((await read(b, otherKey)).rows_ahead).toBe(3)
    // C: 2 queued; A starts min(4, 2) of the account's 4 turns; B's account min(3, 4).
    expect((await read(c)).rows_ahead).toBe(2 + 3)
    // Nothing has settled on the model: no rate to go on.
    expect((await read(a)).estimated_completion_at).toBeNull()
    const listed = (await api().call("GET", "/v1/batches")).body.data as Array<{ id: string; rows_ahead: number }>
    expect(listed.find((x) => x.id === c)?.rows_ahead).toBe(5)
    // A cancelled batch is out of the queue: the others' turns close up.
    expect((await api().call("POST", `/v1/batches/${c}/cancel`)).status).toBe(200)
    expect((await read(a)).rows_ahead).toBe(3)
    expect((await read(b, otherKey)).rows_ahead).toBe(3)
  })

  it("counts the shares between priorities: 9 high rows ahead per standard row, standard work ahead of background", async () => {
    await start()
    const account = `prio-${backend}`
    expect((await api().admin("POST", "/admin/v1/accounts", { id: account, tier: "internal", max_priority: "high" })).status).toBe(200)
    const key = (await api().admin("POST", `/admin/v1/accounts/${account}/keys`, {})).body.key as string
    const createAt = async (rows: ReadonlyArray<object>, priority: string) => {
      const created = await api(key).call("POST", "/v1/batches", { requests: rows, priority })
      expect(created.status, created.text).toBe(200)
      return created.body.id as string
    }
    const first = await createAt(held("first", 1), "standard")
    for (let i = 0; i < 200; i++) {
      if ((await api(key).allResults(first)).some((r) => r.status === "running")) break
      await sleep(20)
    }
    const high = await createAt(held("high", 40), "high")
    const standard = await createAt(held("std", 2), "standard")
    const background = await createAt(held("bg", 3), "background")
    // Standard's 2 rows: 9 high starts before each.
    expect((await read(standard, key)).rows_ahead).toBe(18)
    // High's 40 rows: standard starts one per 9 of them, at most its 2 queued.
    expect((await read(high, key)).rows_ahead).toBe(2)
    // Background waits for everything else queued.
    expect((await read(background, key)).rows_ahead).toBe(42)
    const estimate = await api(key).call("POST", "/v1/batches/estimate", { requests: held("est", 1), priority: "standard" })
    expect(estimate.status, estimate.text).toBe(200)
    // One row behind the standard batch's 2 (its account's turns), so 2 starts of standard: 18 high ones.
    expect(estimate.body.models[0].rows_ahead).toBe(1 + 18)
  })

  it("estimates completion from the model's measured rate while a batch runs, and shows null once it is final", async () => {
    await start()
    const rows = Array.from({ length: 120 }, (_, i) => chatRow(`p-${i}`, `paced ${i}`, "paced"))
    const id = await create(rows)
    let estimate: { at: number; eta: number; done: number } | undefined
    for (let i = 0; i < 500 && estimate === undefined; i++) {
      const b = await read(id)
      const done = b.request_counts.completed + b.request_counts.failed
      if (b.estimated_completion_at !== null && done >= 10 && done < 100) estimate = { at: Date.now() / 1000, eta: b.estimated_completion_at, done }
      await sleep(10)
    }
    expect(estimate, "no estimate while the batch ran").toBeDefined()
    expect(estimate!.eta).toBeGreaterThanOrEqual(Math.floor(estimate!.at))
    const done = await api().waitFinal(id)
    expect(done.status).toBe("completed")
    expect(done.rows_ahead).toBeNull()
    expect(done.estimated_completion_at).toBeNull()
    // The estimate was of the right size: within a minute of when the batch really finished.
    expect(Math.abs(estimate!.eta - done.completed_at)).toBeLessThanOrEqual(60)
  })
})
