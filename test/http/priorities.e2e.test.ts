import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { HIGH_STARTS } from "../../src/domain/scheduling/shares.js"
import { chatRow } from "../support/client.js"
import { startGatedUpstream } from "../support/gatedUpstream.js"
import { scrape } from "../support/prometheus.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"

/*
 * Priorities and deadlines as a model runs them, through the public API on both logs: a high batch
 * overtakes a standard backlog, standard keeps its share under high load, background takes only slots
 * nothing else wants, and a row whose start-by time the turns would miss starts earliest-deadline-first.
 *
 * Each model has one slot and its upstream is the test's own, which holds every request whose text
 * starts with "hold" until the test answers it: the rows reach it one at a time, so the order they
 * arrive in is the order the scheduler started them. Where deadlines matter the test moves the actors'
 * TestClock 10 s before each answer, so the model's measured rate is 0.1 rows a second of that clock.
 */

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
/** The clock's step per answer where deadlines matter: the model's measured rate is one row per step. */
const STEP_MS = 10_000
const FINAL = ["completed", "failed", "expired", "cancelled"]
const MODELS = ["p-overtake", "p-share", "p-background", "p-stream", "p-old"] as const
const SIMULATED = "p-refused"

describe.each(["embedded", "nats"] as const)("priorities and deadlines on a model, on the %s log", (log) => {
  let upstream: Awaited<ReturnType<typeof startGatedUpstream>>
  beforeAll(async () => {
    upstream = await startGatedUpstream()
  })
  afterAll(async () => {
    await upstream?.close()
  })
  const f = withSluice({
    log,
    inProcess: true,
    simulator: { models: [SIMULATED], latencyMs: 2 },
    // Upstream timeouts run on the TestClock: longer than any jump here.
    models: (simUrl) => [
      ...MODELS.map((id) => ({ id, upstream_url: upstream.url, batch_concurrency: 1, timeout_ms: 2 * DAY })),
      { id: SIMULATED, upstream_url: simUrl, batch_concurrency: 1 },
    ],
  })

  let accounts = 0
  /** An internal account of its own, allowed `maxPriority` when given (by PATCH, as an admin raises it). */
  const account = async (maxPriority?: string) => {
    const id = `prio-${log}-${accounts++}`
    expect((await f.api().admin("POST", "/admin/v1/accounts", { id, tier: "internal" })).status).toBe(200)
    if (maxPriority !== undefined) {
      const raised = await f.api().admin("PATCH", `/admin/v1/accounts/${id}`, { max_priority: maxPriority })
      expect(raised.status, raised.text).toBe(200)
    }
    return { id, api: f.api((await f.api().admin("POST", `/admin/v1/accounts/${id}/keys`, {})).body.key) }
  }
  type Api = Awaited<ReturnType<typeof account>>["api"]

  /** `n` rows for `model`, each held at the upstream until answered; `label` names them in the upstream's log. */
  const held = (model: string, label: string, n: number) =>
    Array.from({ length: n }, (_, i) => chatRow(`${label}-${i}`, `hold ${model} ${label} ${i}`, model))
  const create = async (api: Api, body: object) => {
    const created = await api.call("POST", "/v1/batches", body)
    expect(created.status, created.text).toBe(200)
    return created.body as { id: string; priority: string }
  }
  const read = async (api: Api, id: string) => (await api.call("GET", `/v1/batches/${id}`)).body
  /**
   * Waits until the model's actor holds `n` of the account's rows in its queue: a create is answered
   * once stored, and on NATS the actor hears of it from the log a little later.
   */
  const queued = (model: string, accountId: string, n: number) =>
    waitFor(`${n} rows of ${accountId} queued on ${model}`, async () => {
      const state = (await f.api().admin("GET", "/admin/v1/models")).body.data.find((m: { id: string }) => m.id === model)
      return (state?.queued_by_account?.[accountId] ?? 0) >= n
    })

  /** The model's requests in the order they reached the upstream, answered one at a time in that order. */
  const upstreamOf = (model: string) => {
    const prefix = `hold ${model} `
    const arrivals = () => upstream.arrived.filter((t) => t.startsWith(prefix))
    let answered = 0
    /** Answers the next request to arrive, after moving the actors' clock `stepMs`; answers its text. */
    const answerNext = async (stepMs = 0) => {
      await waitFor(`a request for ${model} at the upstream`, () => arrivals().length > answered, { everyMs: 2 })
      const text = arrivals()[answered++]!
      if (stepMs > 0) await f.sluice.adjust(stepMs)
      upstream.release(text)
      return text
    }
    /** Answers requests as they arrive until `done` holds (read before each answer); answers their texts. */
    const answerUntil = async (done: () => Promise<boolean>, stepMs = 0) => {
      const texts: Array<string> = []
      const deadline = Date.now() + 30_000
      while (!(await done())) {
        if (Date.now() > deadline) throw new Error(`${model}: still not done after answering ${texts.length}`)
        if (arrivals().length > answered) texts.push(await answerNext(stepMs))
        else await new Promise((r) => setTimeout(r, 2))
      }
      return texts
    }
    /** Cancels what is left of `batches` and answers whatever of them still runs, until each is final. */
    const drain = async (api: Api, batches: ReadonlyArray<string>) => {
      for (const id of batches) await api.call("POST", `/v1/batches/${id}/cancel`)
      await answerUntil(async () => (await Promise.all(batches.map((id) => read(api, id)))).every((b) => FINAL.includes(b.status)))
    }
    return { arrivals, answerNext, answerUntil, drain }
  }
  const labelled = (texts: ReadonlyArray<string>, label: string) => texts.filter((t) => t.split(" ")[2] === label).length

  it("a high batch submitted behind a large standard backlog overtakes it: the backlog starts one row per HIGH_STARTS of the high batch, not one each", async () => {
    const model = "p-overtake"
    const bulk = await account()
    const urgent = await account("high")
    const at = upstreamOf(model)
    const backlog = await create(bulk.api, { requests: held(model, "standard", 300) })
    await waitFor("the backlog's first row at the upstream", () => at.arrivals().length === 1)

    const high = await create(urgent.api, { requests: held(model, "high", 40), priority: "high" })
    expect(high.priority).toBe("high")
    await queued(model, urgent.id, 40)
    const running = await at.answerNext()
    expect(running).toMatch(/ standard /)
    const during: Array<string> = []
    while (labelled(during, "high") < 40) during.push(await at.answerNext())

    // 40 high rows take 40 / HIGH_STARTS cycles of the shares, a standard row each; fair turns alone would have started about 40.
    expect(labelled(during, "standard")).toBeLessThanOrEqual(Math.ceil(40 / HIGH_STARTS) + 2)
    const done = await urgent.api.waitFinal(high.id)
    expect(done).toMatchObject({ status: "completed", priority: "high", request_counts: { total: 40, completed: 40, failed: 0 } })
    expect((await read(bulk.api, backlog.id)).request_counts.completed).toBe(1 + labelled(during, "standard"))
    await at.drain(bulk.api, [backlog.id])
  })

  it("standard keeps its share under a continuous high load: HIGH_STARTS high rows start per standard row, not all of them first", async () => {
    const model = "p-share"
    const busy = await account("high")
    const other = await account()
    const at = upstreamOf(model)
    const highLoad = await create(busy.api, { requests: held(model, "high", 300), priority: "high" })
    await waitFor("the high load's first row at the upstream", () => at.arrivals().length === 1)
    const started = async () => {
      const metrics = await scrape(f.sluice.url)
      const of = (priority: string) => metrics.value("sluice_rows_started_total", { model, priority, order: "turn" })
      return { high: of("high"), standard: of("standard") }
    }
    const before = await started()

    const standard = await create(other.api, { requests: held(model, "standard", 10) })
    await queued(model, other.id, 10)
    const during = [await at.answerNext()]
    while (labelled(during, "standard") < 10) during.push(await at.answerNext())
    const after = await started()

    // The high row running when the standard batch came is the first answered; then each standard row waits HIGH_STARTS high ones.
    const highStarted = labelled(during, "high") - 1
    expect(highStarted).toBeGreaterThanOrEqual(10 * HIGH_STARTS - HIGH_STARTS)
    expect(highStarted).toBeLessThanOrEqual(10 * HIGH_STARTS + 1)
    expect(after.standard - before.standard).toBe(10)
    // The starts counted include the high row taken once the last standard row was answered.
    expect(after.high - before.high).toBeGreaterThanOrEqual(highStarted)
    expect(after.high - before.high).toBeLessThanOrEqual(highStarted + 1)
    expect(await other.api.waitFinal(standard.id)).toMatchObject({ status: "completed", request_counts: { completed: 10 } })
    expect((await read(busy.api, highLoad.id)).request_counts.completed).toBe(1 + highStarted)
    await at.drain(busy.api, [highLoad.id])
  })

  it("a background batch neither delays a standard batch nor starts while an interactive request is in flight, and finishes once the model is idle", async () => {
    const model = "p-background"
    const { api } = await account()
    const other = await account()
    const at = upstreamOf(model)
    const bulk = await create(api, { requests: held(model, "background", 12), priority: "background" })
    expect(bulk.priority).toBe("background")
    await waitFor("a background row at the upstream", () => at.arrivals().length === 1)
    const standard = await create(other.api, { requests: held(model, "standard", 10) })
    await queued(model, other.id, 10)

    const during = [await at.answerNext()]
    while (labelled(during, "standard") < 10) during.push(await at.answerNext())
    // Only the background row that was running when the standard batch came.
    expect(labelled(during, "background")).toBe(1)
    expect(await other.api.waitFinal(standard.id)).toMatchObject({ status: "completed", request_counts: { completed: 10 } })

    // An interactive request holds the model: the running background row finishes, and no other starts until it ends.
    await waitFor("the next background row at the upstream", () => at.arrivals().length === during.length + 1)
    const interactive = api.call("POST", "/v1/chat/completions", { model, messages: [{ role: "user", content: `hold interactive ${model}` }] })
    await waitFor("the interactive request at the upstream", () => upstream.isHeld(`hold interactive ${model}`))
    await at.answerNext()
    const arrived = at.arrivals().length
    await new Promise((r) => setTimeout(r, 300))
    expect(at.arrivals().length).toBe(arrived)
    upstream.release(`hold interactive ${model}`)
    expect((await interactive).status).toBe(200)

    await at.answerUntil(async () => FINAL.includes((await read(api, bulk.id)).status))
    expect(await read(api, bulk.id)).toMatchObject({ status: "completed", priority: "background", request_counts: { total: 12, completed: 12, failed: 0 } })
    expect(labelled(at.arrivals(), "background")).toBe(12)
  })

  it("a 15m stream's items behind another account's 24h backlog all start within their window, where the turns alone would let some expire", async () => {
    const model = "p-stream"
    const bulk = await account()
    const streaming = await account()
    const at = upstreamOf(model)
    const backlog = await create(bulk.api, { requests: held(model, "backlog", 300) })
    await waitFor("the backlog's first row at the upstream", () => at.arrivals().length === 1)
    const stream = await streaming.api.call("POST", "/v1/streams", { name: "agent run", window: "15m" })
    expect(stream.status, stream.text).toBe(201)
    // Each item is a one-row batch of its own: the turns give the stream's account every other start,
    // 120 starts of 10 s for 60 items, longer than the 15 minutes each has.
    const items = 60
    for (let i = 0; i < items; i++) {
      const item = await streaming.api.call("POST", "/v1/responses", {
        model,
        input: `hold ${model} item ${i}`,
        metadata: { stream_id: stream.body.id, custom_id: `item-${i}` },
      })
      expect(item.status, item.text).toBe(200)
    }
    await queued(model, streaming.id, items)
    const deadlineStarts = async () => (await scrape(f.sluice.url)).value("sluice_rows_started_total", { model, priority: "standard", order: "deadline" })
    const early = await deadlineStarts()

    const detail = async () => (await streaming.api.call("GET", `/v1/streams/${stream.body.id}`)).body
    await at.answerUntil(async () => {
      const now = await detail()
      return now.pending_items === 0 && now.running_items === 0
    }, STEP_MS)
    expect(await detail()).toMatchObject({ total_items: items, completed_items: items, failed_items: 0 })
    expect(await deadlineStarts()).toBeGreaterThan(early)
    await at.drain(bulk.api, [backlog.id])
  })

  it("a batch created a day ago with rows left starts all of them before its expires_at, ahead of its account's newer batch", async () => {
    const model = "p-old"
    const { id, api } = await account()
    const blocking = await account()
    const at = upstreamOf(model)
    const blocker = await create(blocking.api, { requests: held(model, "blocker", 1) })
    await waitFor("the blocker at the upstream", () => at.arrivals().length === 1)
    const old = await create(api, { requests: held(model, "old", 40) })
    // 10 minutes left: 60 starts at the model's rate, where the turns with the newer batch need 80 for the old one's 40 rows.
    await f.sluice.adjust(DAY - 10 * MINUTE)
    const newer = await create(api, { requests: held(model, "newer", 200) })
    await queued(model, id, 240)

    await at.answerUntil(async () => FINAL.includes((await read(api, old.id)).status), STEP_MS)
    const ended = await read(api, old.id)
    expect(ended).toMatchObject({ status: "completed", request_counts: { total: 40, completed: 40, failed: 0 } })
    expect(ended.completed_at).toBeLessThanOrEqual(ended.expires_at)
    expect(await blocking.api.waitFinal(blocker.id)).toMatchObject({ status: "completed" })
    await at.drain(api, [newer.id])
  })

  it("a priority above the account's max_priority is refused naming priority and stores nothing; allowed once an admin raises it", async () => {
    const { id, api } = await account()
    const requests = [chatRow("r", "refused then run", SIMULATED)]
    const refused = await api.call("POST", "/v1/batches", { requests, priority: "high" })
    expect(refused.status, refused.text).toBe(403)
    expect(refused.body.error).toMatchObject({ type: "permission_error", param: "priority" })
    expect((await api.call("GET", "/v1/batches")).body.data).toEqual([])

    expect((await f.api().admin("PATCH", `/admin/v1/accounts/${id}`, { max_priority: "high" })).status).toBe(200)
    const allowed = await create(api, { requests, priority: "high" })
    expect(await api.waitFinal(allowed.id)).toMatchObject({ status: "completed", priority: "high" })
  })
})
