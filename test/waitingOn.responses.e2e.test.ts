import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../src/sim/Directives.js"
import { chatRow, client } from "./support/client.js"
import { BOOTSTRAP_KEY, type Sluice, type TestClockControls } from "./support/sluice.js"
import { waitFor } from "./support/waitFor.js"
import { sameOnEvery, startOwnerAndReader } from "./support/waitingOn.js"

/*
 * `waiting_on` of queued responses (background ones, a stream's items) and of streams, as
 * waitingOn.e2e.test.ts shows it for batches: two Sluice processes on one nats-server, `owner` running
 * the models and `reader` only answering, TestClocks moved together, the simulator as upstream. Each
 * reason is read on both instances, from the object and from its list, and must be the same object
 * everywhere; a stream's is its oldest waiting item's.
 */
const START = Date.UTC(2031, 0, 14, 12, 0, 0)
const CAP = "cap-model"
const WAY = "way-model"
const PUSH = "push-model"
const RETRY = "retry-model"
const HOLD_MS = 150_000

type Api = ReturnType<typeof client>

describe("waiting_on of queued responses and streams, the same on two instances", () => {
  let deployment: Awaited<ReturnType<typeof startOwnerAndReader>>
  let owner: Sluice & TestClockControls
  let reader: Sluice & TestClockControls
  const holds: Array<AbortController> = []

  beforeAll(async () => {
    deployment = await startOwnerAndReader(START, (upstream_url) => [
      { id: CAP, upstream_url, batch_concurrency: 1, timeout_ms: 300_000 },
      { id: WAY, upstream_url, batch_concurrency: 2, timeout_ms: 300_000 },
      { id: PUSH, upstream_url, batch_concurrency: 2, timeout_ms: 300_000 },
      { id: RETRY, upstream_url, batch_concurrency: 4, timeout_ms: 300_000 },
    ])
    ;({ owner, reader } = deployment)
  }, 120_000)

  afterAll(async () => {
    for (const hold of holds) hold.abort()
    await deployment?.stop()
  })

  const account = (settings: Record<string, unknown> = {}) => deployment.account(settings)
  const adjustBoth = (ms: number) => deployment.adjustBoth(ms)

  const respond = async (api: Api, body: object) => {
    const created = await api.call("POST", "/v1/responses", body)
    expect(created.status, created.text).toBe(200)
    expect(created.body.status).toBe("in_progress")
    return created.body.id as string
  }
  const background = (api: Api, model: string, input: string, extra: object = {}) => respond(api, { model, input, background: true, ...extra })
  const item = (api: Api, streamId: string, model: string, input: string) => respond(api, { model, input, metadata: { stream_id: streamId } })
  const stream = async (api: Api, extra: object = {}) => {
    const created = await api.call("POST", "/v1/streams", { name: `s-${Math.random()}`, ...extra })
    expect(created.status, created.text).toBe(201)
    expect(created.body.waiting_on).toBeNull()
    return created.body.id as string
  }
  const answered = (read: Promise<{ status: number; body: any }>, pick: (body: any) => unknown) =>
    read.then((got) => (got.status === 200 ? pick(got.body) : undefined))

  /** A response's `waiting_on` from GET /v1/responses/{id} and from GET /v1/responses, on each instance. */
  const responseOn = (apis: ReadonlyArray<Api>, id: string) =>
    apis.flatMap((api) => [
      () => answered(api.call("GET", `/v1/responses/${id}`), (r) => r.waiting_on),
      () => answered(api.call("GET", "/v1/responses?limit=100"), (l) => l.data.find((r: { id: string }) => r.id === id)?.waiting_on),
    ])
  /** A stream's `waiting_on` from its detail and from GET /v1/streams, on each instance. */
  const streamOn = (apis: ReadonlyArray<Api>, id: string) =>
    apis.flatMap((api) => [
      () => answered(api.call("GET", `/v1/streams/${id}`), (s) => s.waiting_on),
      () => answered(api.call("GET", "/v1/streams"), (l) => l.items.find((s: { id: string }) => s.id === id)?.waiting_on),
    ])
  const statusOf = async (api: Api, id: string) => (await api.call("GET", `/v1/responses/${id}`)).body?.status as string | undefined
  const modelState = async (model: string) =>
    (await client(owner.url).admin("GET", "/admin/v1/models")).body.data.find((m: { id: string }) => m.id === model)

  it("model_capacity: a background response, a stream's item and the stream behind another's running item; null while running and once cancelled", async () => {
    const { apis } = await account()
    // The first stream's item takes the model's one slot: it runs, and neither it nor its stream waits.
    const running = await stream(apis[0]!)
    const long = await item(apis[0]!, running, CAP, `long ${Math.random()} ${simDirective.latency(HOLD_MS)}`)
    await waitFor("the long item to run", async () => (await modelState(CAP))?.running === 1)

    const response = await background(apis[0]!, CAP, "behind the long item")
    const waiting = await sameOnEvery("the background response", responseOn(apis, response), "model_capacity")
    expect(waiting).toMatchObject({ model: CAP, detail: expect.stringContaining("in use by other work") })
    expect(waiting.since).toBeGreaterThanOrEqual(Math.floor(START / 1000))
    expect(waiting.since).toBeLessThanOrEqual(Math.floor((await owner.now()) / 1000))
    // With the model full and work waiting for it, the running item and its stream wait on nothing.
    await sameOnEvery("the running item", responseOn(apis, long), null)
    await sameOnEvery("the stream whose item runs", streamOn(apis, running), null)
    expect((await apis[1]!.call("GET", `/v1/streams/${running}`)).body).toMatchObject({ status: "open", running_items: 1 })
    expect(await statusOf(apis[1]!, long)).toBe("in_progress")

    const queued = await stream(apis[0]!)
    const queuedItem = await item(apis[0]!, queued, CAP, "a queued item")
    const itemWaiting = await sameOnEvery("the stream's queued item", responseOn(apis, queuedItem), "model_capacity")
    expect(itemWaiting.model).toBe(CAP)
    expect(await sameOnEvery("the stream of the queued item", streamOn(apis, queued), "model_capacity")).toEqual(itemWaiting)
    // A second item of the running stream waits too, and the stream says so.
    const second = await item(apis[0]!, running, CAP, "after the long one")
    const secondWaiting = await sameOnEvery("the running stream's second item", responseOn(apis, second), "model_capacity")
    expect(await sameOnEvery("the stream with a waiting item", streamOn(apis, running), "model_capacity")).toEqual(secondWaiting)

    // Cancelled, nothing of them waits any more.
    expect((await apis[0]!.call("DELETE", `/v1/responses/${response}`)).body.status).toBe("cancelled")
    await sameOnEvery("the cancelled response", responseOn(apis, response), null)
    expect((await apis[0]!.call("PATCH", `/v1/streams/${queued}`, { status: "cancelled" })).status).toBe(200)
    await sameOnEvery("the cancelled stream", streamOn(apis, queued), null)
    await sameOnEvery("the cancelled stream's item", responseOn(apis, queuedItem), null)
    expect(await statusOf(apis[1]!, queuedItem)).toBe("cancelled")
  })

  it("giving_way_to_interactive: a background-priority response and a background-priority stream's item wait while an interactive request runs on their model; null once they have run", async () => {
    const hold = new AbortController()
    holds.push(hold)
    const interactive = fetch(`${owner.url}/v1/chat/completions`, {
      method: "POST",
      signal: hold.signal,
      headers: { "content-type": "application/json", authorization: `Bearer ${BOOTSTRAP_KEY}` },
      body: JSON.stringify({ model: WAY, messages: [{ role: "user", content: `interactive ${simDirective.latency(HOLD_MS)}` }] }),
    }).catch(() => undefined)
    await waitFor("the interactive request to be in flight", async () => (await modelState(WAY))?.interactive_in_flight === 1)

    const { apis } = await account()
    const response = await background(apis[0]!, WAY, "in the background", { priority: "background" })
    const waiting = await sameOnEvery("the background response", responseOn(apis, response), "giving_way_to_interactive")
    expect(waiting).toMatchObject({ model: WAY, detail: expect.stringContaining("Background-priority") })
    const s = await stream(apis[0]!, { priority: "background" })
    const queuedItem = await item(apis[0]!, s, WAY, "a background item")
    const itemWaiting = await sameOnEvery("the stream's item", responseOn(apis, queuedItem), "giving_way_to_interactive")
    expect(await sameOnEvery("the background stream", streamOn(apis, s), "giving_way_to_interactive")).toEqual(itemWaiting)

    hold.abort()
    await interactive
    await waitFor("both to complete", async () => (await statusOf(apis[1]!, response)) === "completed" && (await statusOf(apis[1]!, queuedItem)) === "completed")
    await sameOnEvery("the completed response", responseOn(apis, response), null)
    await sameOnEvery("the completed item", responseOn(apis, queuedItem), null)
    await sameOnEvery("the open stream with nothing waiting", streamOn(apis, s), null)
  })

  it("upstream_backoff: another's row was answered 429 with Retry-After, the model's two slots are cut to one, which a long row holds: the response, the item and the stream wait", async () => {
    const other = await account()
    const created = await other.apis[0]!.call("POST", "/v1/batches", {
      requests: [
        chatRow("pushed", `pushed back ${Math.random()} ${simDirective.fail(1, 429)}`, PUSH),
        chatRow("long", `long ${Math.random()} ${simDirective.latency(HOLD_MS)}`, PUSH),
        chatRow("c", "c", PUSH),
      ],
    })
    expect(created.status, created.text).toBe(200)
    await waitFor("the pushback", async () => (await modelState(PUSH))?.pushback === 1)

    const { apis } = await account()
    const response = await background(apis[0]!, PUSH, "behind the pushback")
    const waiting = await sameOnEvery("the background response", responseOn(apis, response), "upstream_backoff")
    expect(waiting).toMatchObject({ model: PUSH, retry_after_s: 1, detail: expect.stringContaining("cut to 1 of 2") })
    const s = await stream(apis[0]!)
    const queuedItem = await item(apis[0]!, s, PUSH, "an item behind the pushback")
    const itemWaiting = await sameOnEvery("the stream's item", responseOn(apis, queuedItem), "upstream_backoff")
    expect(itemWaiting).toMatchObject({ model: PUSH, retry_after_s: 1 })
    expect(await sameOnEvery("the stream", streamOn(apis, s), "upstream_backoff")).toEqual(itemWaiting)
  })

  it("retry_backoff: a background response and a stream's item whose only call was answered 429 sleep until their retry (TestClock); null once time moves on and they complete", async () => {
    const { apis } = await account()
    const response = await background(apis[0]!, RETRY, `again ${Math.random()} ${simDirective.fail(1, 429)}`)
    const waiting = await sameOnEvery("the sleeping response", responseOn(apis, response), "retry_backoff")
    const now = await owner.now()
    expect(waiting.next_retry_at).toBeGreaterThanOrEqual(Math.floor(now / 1000))
    expect(waiting.next_retry_at).toBeLessThanOrEqual(Math.ceil((now + 120_000) / 1000))
    expect(waiting.detail).toContain(new Date(waiting.next_retry_at * 1000).toISOString().slice(0, 19))

    const s = await stream(apis[0]!)
    const queuedItem = await item(apis[0]!, s, RETRY, `item again ${Math.random()} ${simDirective.fail(1, 429)}`)
    const itemWaiting = await sameOnEvery("the sleeping item", responseOn(apis, queuedItem), "retry_backoff")
    expect(await sameOnEvery("the stream of the sleeping item", streamOn(apis, s), "retry_backoff")).toEqual(itemWaiting)
    expect((await apis[1]!.call("GET", `/v1/streams/${s}`)).body).toMatchObject({ pending_items: 1, running_items: 0 })

    await adjustBoth(120_000)
    await waitFor("both to complete", async () => (await statusOf(apis[1]!, response)) === "completed" && (await statusOf(apis[1]!, queuedItem)) === "completed")
    await sameOnEvery("the completed response", responseOn(apis, response), null)
    await sameOnEvery("the completed item", responseOn(apis, queuedItem), null)
    await sameOnEvery("the stream with its item done", streamOn(apis, s), null)
  })
})
