import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { chatRow, client } from "../support/client.js"
import { type InProcessSluice, startInProcessSluice } from "../support/inProcessSluice.js"
import type { CatalogEntry } from "../support/sluice.js"

/*
 * The seed's window, retention and limits: a batch's requests have 24 hours to start, a finished
 * batch is kept 7 days, an account has at most 10 unfinished batches. The actors run on a TestClock,
 * so days pass in milliseconds; the simulator answers in real time.
 */
const HOUR = 3_600_000
const DAY = 24 * HOUR
const FINAL = ["completed", "failed", "expired", "cancelled"]

// A 429 whose Retry-After outlasts every test: the row waits for its retry, holding no slot.
const PARKED_FOR_S = 40 * 86_400
// Upstream timeouts run on the TestClock too: longer than any jump a test makes.
const TIMEOUT_MS = 2 * DAY

const tick = (ms = 10) => new Promise((r) => setTimeout(r, ms))

/** Polls (real time, for I/O only) until `read` answers something `done` accepts. */
const eventually = async <T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> => {
  const deadline = Date.now() + 20_000
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`)
    await tick()
  }
}

describe("completion window, retention and the unfinished-batch limit, on a TestClock", () => {
  let sim: Simulator
  let sluice: InProcessSluice | undefined

  const models = (url: string): ReadonlyArray<CatalogEntry> => [
    { id: "fast", upstream_url: url, batch_concurrency: 8, timeout_ms: TIMEOUT_MS },
    { id: "single", upstream_url: url, batch_concurrency: 1, timeout_ms: TIMEOUT_MS },
    { id: "parking", upstream_url: url, batch_concurrency: 8, timeout_ms: TIMEOUT_MS },
  ]
  const start = async (options: Omit<Parameters<typeof startInProcessSluice>[0], "models"> = {}) =>
    (sluice = await startInProcessSluice({ models: models(sim.url), ...options }))

  beforeAll(async () => {
    sim = await startSimulator({ models: ["fast", "single", "parking"], faults: { retryAfterSeconds: PARKED_FOR_S } })
  })
  afterEach(async () => {
    await sluice?.stop()
    sluice = undefined
  })
  afterAll(async () => {
    await sim?.close()
  })

  const api = () => client(sluice!.url)
  const quick = (id: string) => chatRow(id, `quick ${id}`, "fast")
  const parked = (id: string) => chatRow(id, `parked ${id} ${simDirective.status(429)}`, "parking")

  const create = async (requests: ReadonlyArray<object>) => {
    const created = await api().call("POST", "/v1/batches", { requests })
    expect(created.status, created.text).toBe(200)
    return created.body.id as string
  }
  const read = async (batchId: string) => (await api().call("GET", `/v1/batches/${batchId}`)).body
  const statusOf = async (batchId: string) => (await api().call("GET", `/v1/batches/${batchId}`)).status
  const resultsStatusOf = async (batchId: string) => (await api().call("GET", `/v1/batches/${batchId}/results`)).status
  const finished = (batchId: string) => eventually(() => read(batchId), (b) => FINAL.includes(b.status), `batch ${batchId}`)
  const readWhen = (batchId: string, status: string) =>
    eventually(() => read(batchId), (b) => b.status === status, `batch ${batchId} becoming ${status}`)
  const goneWhen = (batchId: string) => eventually(() => statusOf(batchId), (s) => s === 404, `batch ${batchId} deleted`)
  /** A parked batch's single row has had its attempt and waits for a retry: nothing of it runs. */
  const waitingForRetry = (batchId: string) =>
    eventually(
      () => api().allResults(batchId),
      (rows) => rows.every((r) => r.status === "queued" && r.error?.code === "rate_limited"),
      `batch ${batchId} waiting for its retry`,
    )

  it("a batch whose rows cannot all start in 24 h expires then: the running row finishes, the rest expire and count as failed", async () => {
    await start()
    const early = await create([quick("early")])
    const earlyDone = await finished(early)
    expect(earlyDone.status).toBe("completed")

    const slow = (id: string) => chatRow(id, `slow ${id} ${simDirective.latency(1_500)}`, "single")
    const batchId = await create([slow("r0"), slow("r1"), slow("r2")])
    await eventually(() => api().allResults(batchId), (rows) => rows.some((r) => r.status === "running"), "a row running")

    await sluice!.adjust(23 * HOUR)
    expect((await read(batchId)).status).toBe("in_progress")
    await sluice!.adjust(HOUR)
    const expired = await readWhen(batchId, "expired")
    expect(expired.expired_at).not.toBeNull()
    expect(expired.expired_at).toBeGreaterThanOrEqual(expired.expires_at)

    const rows = await eventually(
      () => api().allResults(batchId),
      (all) => all.every((r) => r.status !== "running" && r.status !== "queued"),
      "the running row finishing",
    )
    const ran = rows.filter((r) => r.status === "completed")
    const never = rows.filter((r) => r.status === "expired")
    expect(ran).toHaveLength(1)
    expect(ran[0].response.body.object).toBe("chat.completion")
    expect(never).toHaveLength(2)
    for (const row of never) expect(row).toMatchObject({ response: null, error: { code: "batch_expired" } })

    const after = await read(batchId)
    expect(after.status).toBe("expired")
    expect(after.request_counts).toEqual({ total: 3, completed: 1, failed: 2 })
    expect(await read(early)).toEqual(earlyDone)
  })

  it("a row waiting for its retry when the window closes expires with the batch", async () => {
    await start()
    const batchId = await create([parked("waits"), quick("done")])
    await eventually(
      () => api().allResults(batchId),
      ([waits, done]) => waits?.error?.code === "rate_limited" && done?.status === "completed",
      "one row done, one waiting for its retry",
    )
    await sluice!.adjust(DAY)
    const expired = await readWhen(batchId, "expired")
    expect(expired.request_counts).toEqual({ total: 2, completed: 1, failed: 1 })
    const [waits] = await api().allResults(batchId)
    expect(waits).toMatchObject({ status: "expired", error: { code: "batch_expired" } })
  })

  it("a finished batch is readable until 7 days after it finished and gone after; an unfinished one is kept", async () => {
    // A window longer than the retention, so that a batch stays unfinished past 7 days.
    await start({ config: { completionWindowHours: 30 * 24 } })
    const completed = await create([quick("one")])
    await finished(completed)
    const cancelled = await create([parked("cancel me")])
    await api().call("POST", `/v1/batches/${cancelled}/cancel`)
    await readWhen(cancelled, "cancelled")
    const unfinished = await create([parked("stays")])
    await waitingForRetry(unfinished)

    await sluice!.adjust(7 * DAY - 60_000)
    for (const batchId of [completed, cancelled]) {
      expect(await statusOf(batchId)).toBe(200)
      expect(await resultsStatusOf(batchId)).toBe(200)
    }

    await sluice!.adjust(60_000)
    for (const batchId of [completed, cancelled]) {
      await goneWhen(batchId)
      expect(await resultsStatusOf(batchId)).toBe(404)
    }
    expect((await read(unfinished)).status).toBe("in_progress")

    await sluice!.adjust(14 * DAY)
    await tick(50)
    expect((await read(unfinished)).status).toBe("in_progress")
    expect(await resultsStatusOf(unfinished)).toBe(200)
  })

  it("the 11th unfinished batch is refused with 429 and nothing is stored; a finished or cancelled one makes room", async () => {
    await start()
    const parkedBatches: Array<string> = []
    for (let i = 0; i < 9; i++) parkedBatches.push(await create([parked(`p${i}`)]))
    // Answered 503 every time: it finishes only when its eight attempts' backoff has run on the clock.
    const failing = await create([chatRow("f", `fails ${simDirective.status(503)}`, "fast")])

    const refused = await api().call("POST", "/v1/batches", { requests: [quick("eleventh")] })
    expect(refused.status).toBe(429)
    expect(refused.body.error).toMatchObject({ type: "rate_limit_error", param: null })
    expect(refused.body.error.message).toContain("10 unfinished batches")
    const listed = await api().call("GET", "/v1/batches?limit=100")
    expect(listed.body.data).toHaveLength(10)

    for (let i = 0; i < 400 && !FINAL.includes((await read(failing)).status); i++) {
      await sluice!.adjust(5_000)
      await tick(5)
    }
    expect((await read(failing)).status).toBe("completed")
    const tenth = await create([parked("tenth")])
    expect((await api().call("POST", "/v1/batches", { requests: [quick("again")] })).status).toBe(429)

    const cancel = await api().call("POST", `/v1/batches/${parkedBatches[0]}/cancel`)
    expect(cancel.status).toBe(200)
    await readWhen(parkedBatches[0]!, "cancelled")
    await create([parked("after cancel")])
    expect((await api().call("POST", "/v1/batches", { requests: [quick("full")] })).status).toBe(429)
    expect((await api().call("GET", "/v1/batches?limit=100")).body.data).toHaveLength(12)
    expect(await statusOf(tenth)).toBe(200)
  })

  it("expiry and retention survive a restart on the same data", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "sluice-timers-"))
    try {
      const first = await start({ dataDir, keepData: true })
      const completed = await create([quick("done")])
      await finished(completed)
      const expiring = await create([parked("expires")])
      await waitingForRetry(expiring)
      await first.adjust(12 * HOUR)
      expect((await read(expiring)).status).toBe("in_progress")
      const startAt = await first.now()
      await first.stop()

      let attempts = sim.stats().received
      const second = await start({ dataDir, keepData: true, startAt })
      // Restarted, the waiting row is handed to its model again and parks once more.
      await eventually(async () => sim.stats().received, (n) => n > attempts, "the row's attempt after the restart")
      await waitingForRetry(expiring)
      await second.adjust(12 * HOUR)
      const expired = await readWhen(expiring, "expired")
      expect(expired.request_counts).toEqual({ total: 1, completed: 0, failed: 1 })
      expect((await api().allResults(expiring))[0]).toMatchObject({ status: "expired", error: { code: "batch_expired" } })
      const restartAt = await second.now()
      await second.stop()

      attempts = sim.stats().received
      const third = await start({ dataDir, startAt: restartAt })
      await third.adjust(6 * DAY - 60_000)
      expect(await statusOf(completed)).toBe(200)
      await third.adjust(120_000)
      await goneWhen(completed)
      expect(await statusOf(expiring)).toBe(200)
      await third.adjust(DAY)
      await goneWhen(expiring)
      expect(sim.stats().received).toBe(attempts)
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
