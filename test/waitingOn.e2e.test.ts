import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../src/sim/Directives.js"
import { chatRow, client } from "./support/client.js"
import { BOOTSTRAP_KEY, type Sluice, type TestClockControls } from "./support/sluice.js"
import { waitFor } from "./support/waitFor.js"
import { sameOnEvery, startOwnerAndReader, waitingGauge } from "./support/waitingOn.js"

/*
 * Every reason a batch waits, produced through the API of a real deployment: two Sluice processes on
 * one nats-server, `owner` running the models and `reader` (SLUICE_RUN_MODELS=false) only answering,
 * with the simulator as upstream. Each reason is read from both and must be the same object on both.
 * Both run their actors on a TestClock started ten minutes before a midnight UTC and moved together,
 * so retries wait until the test moves time and the daily quota renews when it passes midnight. The
 * simulator's latencies are wall-clock time: a long one holds a slot while the test looks.
 */
const START = Date.UTC(2031, 0, 14, 23, 50, 0)
const MIDNIGHT = Date.UTC(2031, 0, 15) / 1000
const CAP = "cap-model"
const WAY = "way-model"
const PUSH = "push-model"
const ACCT = "acct-model"
const HOLD_MS = 150_000

describe("waiting_on, the same on two instances", () => {
  let deployment: Awaited<ReturnType<typeof startOwnerAndReader>>
  let owner: Sluice & TestClockControls
  let reader: Sluice & TestClockControls
  const holds: Array<AbortController> = []

  beforeAll(async () => {
    deployment = await startOwnerAndReader(START, (upstream_url) => [
      { id: CAP, upstream_url, batch_concurrency: 1, timeout_ms: 300_000 },
      { id: WAY, upstream_url, batch_concurrency: 2, timeout_ms: 300_000 },
      { id: PUSH, upstream_url, batch_concurrency: 2, timeout_ms: 300_000 },
      { id: ACCT, upstream_url, batch_concurrency: 4, timeout_ms: 300_000, input_usd_per_mtok: 1_000, output_usd_per_mtok: 1_000 },
    ])
    ;({ owner, reader } = deployment)
  }, 120_000)

  afterAll(async () => {
    for (const hold of holds) hold.abort()
    await deployment?.stop()
  })

  const urls = () => deployment.urls()
  const account = (settings: Record<string, unknown> = {}) => deployment.account(settings)
  const adjustBoth = (ms: number) => deployment.adjustBoth(ms)
  const create = async (api: ReturnType<typeof client>, rows: ReadonlyArray<object>, extra: object = {}) => {
    const created = await api.call("POST", "/v1/batches", { requests: rows, ...extra })
    expect(created.status, created.text).toBe(200)
    return created.body.id as string
  }
  const batchOn = (apis: ReadonlyArray<ReturnType<typeof client>>, id: string) =>
    apis.map((api) => async () => {
      const got = await api.call("GET", `/v1/batches/${id}`)
      return got.status === 200 ? got.body.waiting_on : undefined
    })
  const adminBatchOn = (id: string) =>
    urls().map((url) => async () => {
      const got = await client(url).admin("GET", `/admin/v1/batches/${id}`)
      return got.status === 200 ? got.body.waiting_on : undefined
    })
  /** A batch of a fresh account whose one row holds the model's slot (wall-clock time) until the tests end: one per model. */
  const held = new Map<string, Promise<string>>()
  const holdSlot = (model: string) => {
    if (!held.has(model)) held.set(model, startHold(model))
    return held.get(model)!
  }
  const startHold = async (model: string) => {
    const { apis } = await account()
    const id = await create(apis[0]!, [chatRow("hold", `hold ${Math.random()} ${simDirective.latency(HOLD_MS)}`, model)])
    await waitFor("the holding row to run", async () => (await apis[0]!.allResults(id))[0]?.status === "running")
    return id
  }

  it("model_capacity: a batch whose model's one slot runs another's row; the running batch itself waits on nothing", async () => {
    const holding = await holdSlot(CAP)
    const { apis } = await account()
    const id = await create(apis[0]!, [chatRow("a", "after the hold", CAP)])
    const waiting = await sameOnEvery("the queued batch", batchOn(apis, id), "model_capacity")
    expect(waiting).toMatchObject({ model: CAP, detail: expect.stringContaining("in use by other work") })
    expect(waiting.since).toBeLessThanOrEqual(Math.floor((await owner.now()) / 1000))
    expect(waiting.since).toBeGreaterThanOrEqual(Math.floor(START / 1000))
    const admins = urls().map((url) => async () => (await client(url).admin("GET", `/admin/v1/batches/${holding}`)).body.waiting_on)
    await sameOnEvery("the running batch", admins, null)
    // The list shows it too.
    const listed = await apis[1]!.call("GET", "/v1/batches")
    expect(listed.body.data.find((b: { id: string }) => b.id === id).waiting_on).toEqual(waiting)
  })

  it("access_revoked: the account lost batch access (tier standard) while its batch waited; it waits on the model again once access is back", async () => {
    await holdSlot(CAP)
    const { id: accountId, apis } = await account()
    const id = await create(apis[0]!, [chatRow("a", "while access goes", CAP)])
    await sameOnEvery("the queued batch", batchOn(apis, id), "model_capacity")
    expect((await apis[0]!.admin("PATCH", `/admin/v1/accounts/${accountId}`, { tier: "standard" })).status).toBe(200)
    const waiting = await sameOnEvery("the batch of an account without batch access", batchOn(apis, id), "access_revoked")
    expect(waiting.detail).toMatch(/lost batch access/)
    expect((await apis[0]!.admin("PATCH", `/admin/v1/accounts/${accountId}`, { tier: "internal" })).status).toBe(200)
    await sameOnEvery("the batch with access back", batchOn(apis, id), "model_capacity")
  })

  it("account_slots: every concurrent-request slot of the account (1) runs one of its rows; the other row waits beside free model slots", async () => {
    const { apis } = await account({ concurrency: 1 })
    const id = await create(apis[0]!, [
      chatRow("slow", `slow ${Math.random()} ${simDirective.latency(HOLD_MS)}`, ACCT),
      chatRow("next", "next", ACCT),
    ])
    const waiting = await sameOnEvery("the batch of a full account", batchOn(apis, id), "account_slots")
    expect(waiting.detail).toContain("(1)")
  })

  it("giving_way_to_interactive: a background batch waits while an interactive request is in flight on its model, and runs once it ends", async () => {
    const hold = new AbortController()
    holds.push(hold)
    const interactive = fetch(`${owner.url}/v1/chat/completions`, {
      method: "POST",
      signal: hold.signal,
      headers: { "content-type": "application/json", authorization: `Bearer ${BOOTSTRAP_KEY}` },
      body: JSON.stringify({ model: WAY, messages: [{ role: "user", content: `interactive ${simDirective.latency(HOLD_MS)}` }] }),
    }).catch(() => undefined)
    await waitFor("the interactive request to be in flight", async () => {
      const models = await client(owner.url).admin("GET", "/admin/v1/models")
      return models.body.data.find((m: { id: string }) => m.id === WAY)?.interactive_in_flight === 1
    })
    const { apis } = await account()
    const id = await create(apis[0]!, [chatRow("bg", "in the background", WAY)], { priority: "background" })
    const waiting = await sameOnEvery("the background batch", batchOn(apis, id), "giving_way_to_interactive")
    expect(waiting).toMatchObject({ model: WAY, detail: expect.stringContaining("Background-priority") })
    hold.abort()
    await interactive
    await apis[0]!.waitFinal(id)
    await sameOnEvery("the completed batch", batchOn(apis, id), null)
  })

  it("upstream_backoff: the upstream answered 429 with Retry-After, the model's two slots are cut to one, which a long row holds: the rest wait", async () => {
    const { apis } = await account()
    const id = await create(apis[0]!, [
      chatRow("pushed", `pushed back ${Math.random()} ${simDirective.fail(1, 429)}`, PUSH),
      chatRow("long", `long ${Math.random()} ${simDirective.latency(HOLD_MS)}`, PUSH),
      chatRow("c", "c", PUSH),
      chatRow("d", "d", PUSH),
    ])
    const waiting = await sameOnEvery("the batch behind the pushback", batchOn(apis, id), "upstream_backoff")
    expect(waiting).toMatchObject({ model: PUSH, retry_after_s: 1, detail: expect.stringContaining("cut to 1 of 2") })
  })

  it("retry_backoff: the batch's only row sleeps until its retry (TestClock); once time moves on it completes", async () => {
    const { apis } = await account()
    const id = await create(apis[0]!, [chatRow("again", `again ${Math.random()} ${simDirective.fail(1, 429)}`, ACCT)])
    const waiting = await sameOnEvery("the sleeping batch", batchOn(apis, id), "retry_backoff")
    const now = await owner.now()
    expect(waiting.next_retry_at).toBeGreaterThanOrEqual(Math.floor(now / 1000))
    expect(waiting.next_retry_at).toBeLessThanOrEqual(Math.ceil((now + 120_000) / 1000))
    expect(waiting.detail).toContain(new Date(waiting.next_retry_at * 1000).toISOString().slice(0, 19))
    await adjustBoth(120_000)
    expect((await apis[0]!.waitFinal(id)).status).toBe("completed")
    await sameOnEvery("the completed batch", batchOn(apis, id), null)
  })

  it("daily_quota: the account's quota is used up (its own calls answer 429; the admin view and the gauge say why) until 00:00 UTC, when it renews", async () => {
    const { id: accountId, apis } = await account()
    const spent = await create(apis[0]!, [chatRow("spend", "spend a little", ACCT)])
    expect((await apis[0]!.waitFinal(spent)).cost_usd).toBeGreaterThan(0)
    await holdSlot(CAP)
    const id = await create(apis[0]!, [chatRow("later", "after the quota", CAP)])
    await sameOnEvery("the batch behind the model", batchOn(apis, id), "model_capacity")
    expect((await apis[0]!.admin("PATCH", `/admin/v1/accounts/${accountId}`, { daily_quota_usd: 0.000001 })).status).toBe(200)
    const waiting = await sameOnEvery("the batch of a spent account", adminBatchOn(id), "daily_quota")
    expect(waiting.until).toBe(MIDNIGHT)
    expect(waiting.detail).toContain(new Date(MIDNIGHT * 1000).toISOString())
    expect((await apis[0]!.call("GET", `/v1/batches/${id}`)).status).toBe(429)
    for (const url of urls()) {
      await waitFor("the gauge to count it", async () => ((await waitingGauge(url)).daily_quota ?? 0) >= 1)
    }
    // Past midnight the quota renews: its owner reads the batch again, and it runs (the TestClock's ten minutes
    // also time the holding row's call out, which frees the model).
    await adjustBoth(MIDNIGHT * 1000 - (await owner.now()) + 60_000)
    expect((await apis[0]!.waitFinal(id, 120_000)).status).toBe("completed")
    await sameOnEvery("the batch past midnight", batchOn(apis, id), null)
  })
})
