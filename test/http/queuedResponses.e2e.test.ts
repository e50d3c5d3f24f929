import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { client } from "../support/client.js"
import { type InProcessSluice, startInProcessSluice } from "../support/inProcessSluice.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"
import { BOOTSTRAP_KEY } from "../support/sluice.js"
import { startGatedUpstream } from "../support/gatedUpstream.js"
import { waitFor } from "../support/waitFor.js"

/*
 * Background responses and streams through the public API: each is queued for one of its model's batch
 * slots as a one-row batch. The upstream is the test's own: it answers each request with its last
 * message's text, and holds those whose text starts with "hold" until the test lets them go, so a test
 * knows which request runs and which waits.
 */

const MODEL = "gated"

describe.each([
  { log: "the embedded log", nats: false },
  { log: "NATS JetStream", nats: true },
] as const)("queued responses and streams, on $log", ({ nats: onNats }) => {
  let nats: NatsServer | undefined
  let upstream: Awaited<ReturnType<typeof startGatedUpstream>>
  let sluice: InProcessSluice
  let openai: OpenAI
  const http = client(() => sluice.url)
  const api = Object.assign(http.call, { admin: http.admin })

  beforeAll(async () => {
    if (onNats) nats = await startNatsServer()
    upstream = await startGatedUpstream()
    sluice = await startInProcessSluice({
      ...(nats === undefined ? {} : { natsUrl: nats.url }),
      models: [{ id: MODEL, upstream_url: upstream.url, upstream_model: "gated-upstream", batch_concurrency: 1, timeout_ms: 3_600_000 }],
    })
    openai = new OpenAI({ apiKey: BOOTSTRAP_KEY, baseURL: `${sluice.url}/v1`, maxRetries: 0 })
  })
  afterAll(async () => {
    await sluice?.stop()
    await upstream?.close()
    await nats?.stop()
  })

  const create = (body: object) => api("POST", "/v1/responses", { model: MODEL, ...body })
  const read = (id: string) => api("GET", `/v1/responses/${id}`)
  const settled = async (id: string) => {
    let last: any
    await waitFor(`response ${id} is final`, async () => {
      last = (await read(id)).body
      return last.status !== "in_progress"
    })
    return last
  }
  const held = (text: string) => waitFor(`the upstream holds '${text}'`, () => upstream.isHeld(text))
  const otherKey = async (id: string) => {
    expect((await api.admin("POST", "/admin/v1/accounts", { id, tier: "internal" })).status).toBe(200)
    return (await api.admin("POST", `/admin/v1/accounts/${id}/keys`, {})).body.key as string
  }

  it("background: answered at once in_progress, run on a batch slot, read back completed by openai's own client; never a batch", async () => {
    const created = await openai.responses.create({ model: MODEL, input: "hello there", background: true, metadata: { run: "7" } })
    expect(created).toMatchObject({ object: "response", status: "in_progress", background: true, output: [], error: null, metadata: { run: "7" } })
    expect(created.id).toMatch(/^resp_[0-9a-f]{32}$/)
    await settled(created.id)
    const done = await openai.responses.retrieve(created.id)
    expect(done).toMatchObject({ id: created.id, status: "completed", background: true, model: MODEL, metadata: { run: "7" } })
    expect(done.output_text).toBe("echo: hello there")
    expect(done.usage).toMatchObject({ input_tokens: 5, output_tokens: 3, total_tokens: 8 })
    // The same object on every read: its items' ids are its own.
    expect((await read(created.id)).body).toEqual((await read(created.id)).body)

    const batches = await api("GET", "/v1/batches?limit=100")
    expect(batches.body.data.map((b: { id: string }) => b.id)).not.toContain(created.id)
    expect((await api("GET", `/v1/batches/${created.id}`)).status).toBe(404)
    const listed = await api("GET", "/v1/responses?limit=100")
    expect(listed.body.data.map((r: { id: string }) => r.id)).toContain(created.id)
    // Its completion is in the feed outside streams, named by its response id.
    const feed = await api("GET", "/v1/responses/events?limit=100")
    expect(feed.body.data.find((e: { response_id: string | null }) => e.response_id === created.id)).toMatchObject({ status: "completed", total_tokens: 8 })
  })

  it("another account's response and stream read as ones that do not exist", async () => {
    const mine = (await create({ input: "mine", background: true })).body
    const stream = (await api("POST", "/v1/streams", { name: "private" })).body
    const other = client(() => sluice.url, await otherKey(`acct_other_${onNats ? "n" : "e"}`)).call
    expect((await other("GET", `/v1/responses/${mine.id}`)).status).toBe(404)
    expect((await other("POST", `/v1/responses/${mine.id}/cancel`)).status).toBe(404)
    expect((await other("GET", `/v1/streams/${stream.id}`)).status).toBe(404)
    const joined = await other("POST", "/v1/responses", { model: MODEL, input: "x", metadata: { stream_id: stream.id } })
    expect(joined.status).toBe(404)
    expect((await other("GET", "/v1/responses?limit=100")).body.data).toEqual([])
    await settled(mine.id)
  })

  it("a background response cancelled while queued never reaches the upstream; one cancelled while running keeps its answer", async () => {
    const running = (await create({ input: "hold cancel-running", background: true })).body
    await held("hold cancel-running")
    const queued = (await create({ input: "queued behind", background: true })).body
    const cancelled = await api("POST", `/v1/responses/${queued.id}/cancel`)
    expect(cancelled.status).toBe(200)
    expect(cancelled.body).toMatchObject({ id: queued.id, status: "cancelled", output: [] })

    // sference's DELETE cancels and answers the Response; while the call runs it stays in_progress.
    const deleting = await api("DELETE", `/v1/responses/${running.id}`)
    expect(deleting.body).toMatchObject({ id: running.id, status: "in_progress" })
    upstream.release("hold cancel-running")
    const ended = await settled(running.id)
    expect(ended).toMatchObject({ status: "cancelled" })
    expect(ended.output[0].content[0].text).toBe("echo: hold cancel-running")

    expect(upstream.arrived).not.toContain("queued behind")
    // Final means final: a cancel of a final response answers it unchanged.
    expect((await api("POST", `/v1/responses/${queued.id}/cancel`)).body).toEqual(cancelled.body)
  })

  it("a stream: created with sference's shape, items join with metadata.stream_id and are answered at once, counters never null", async () => {
    const made = await api("POST", "/v1/streams", { name: "agent run" })
    expect(made.status).toBe(201)
    expect(made.body).toMatchObject({
      object: "stream",
      name: "agent run",
      window: "24h",
      status: "open",
      total_items: 0,
      pending_items: 0,
      completion_ratio: 0,
      total_tokens: 0,
      cancelled_at: null,
      archived_at: null,
      last_completion_at: null,
    })
    expect(made.body.id).toMatch(/^stream_/)
    expect(new Date(made.body.created_at).toISOString()).toBe(made.body.created_at)

    const items = await Promise.all(
      ["one", "two", "three"].map((text, i) => create({ input: text, metadata: { stream_id: made.body.id, custom_id: `item-${i}` } })),
    )
    for (const item of items) expect(item.body).toMatchObject({ status: "in_progress", metadata: { stream_id: made.body.id } })
    for (const item of items) await settled(item.body.id)

    const detail = (await api("GET", `/v1/streams/${made.body.id}`)).body
    expect(detail).toMatchObject({ total_items: 3, completed_items: 3, pending_items: 0, running_items: 0, failed_items: 0, completion_ratio: 1 })
    expect(detail).toMatchObject({ total_prompt_tokens: 15, total_completion_tokens: 9, total_tokens: 24 })
    expect(typeof detail.last_completion_at).toBe("string")
    const listed = await api("GET", `/v1/responses?stream_id=${made.body.id}`)
    expect(listed.body.data.map((r: { id: string }) => r.id).sort()).toEqual(items.map((i) => i.body.id).sort())
    expect((await api("GET", "/v1/streams")).body.items.map((s: { id: string }) => s.id)).toContain(made.body.id)

    // The stream's completion events: one per item, with its response id and custom_id; its detail names the newest.
    const feed = await api("GET", `/v1/responses/events?stream_id=${made.body.id}&limit=100`)
    expect(feed.status).toBe(200)
    expect(feed.body.data.map((e: { response_id: string }) => e.response_id).sort()).toEqual(items.map((i) => i.body.id).sort())
    expect(feed.body.data.map((e: { custom_id: string }) => e.custom_id).sort()).toEqual(["item-0", "item-1", "item-2"])
    expect(feed.body.data.every((e: { status: string }) => e.status === "completed")).toBe(true)
    expect(detail.latest_completion_id).toBe(feed.body.data[0].completion_id)
    expect((await api("GET", "/v1/responses/events?stream_id=stream_nope")).status).toBe(404)

    const renamed = await api("PATCH", `/v1/streams/${made.body.id}`, { name: "agent run 2" })
    expect(renamed.body).toMatchObject({ name: "agent run 2", status: "open" })
  })

  it("a stream cancelled with items queued and running: no new items, the queued ones cancelled, the running one finishes", async () => {
    const stream = (await api("POST", "/v1/streams", { name: "to cancel", window: "1h" })).body
    const item = (text: string) => create({ input: text, metadata: { stream_id: stream.id } })
    const running = (await item("hold stream-running")).body as { id: string }
    await held("hold stream-running")
    const queued = await Promise.all([item("stream-queued-1"), item("stream-queued-2")])

    const cancelled = await api("PATCH", `/v1/streams/${stream.id}`, { status: "cancelled" })
    expect(cancelled.status, cancelled.text).toBe(200)
    expect(cancelled.body, cancelled.text).toMatchObject({ status: "cancelled", cancelled_items: 2, running_items: 1, total_items: 3 })
    for (const q of queued) expect((await read(q.body.id)).body.status).toBe("cancelled")

    const refused = await item("too late")
    expect(refused.status).toBe(409)
    expect(refused.body.error.message).toBe(`Stream '${stream.id}' is cancelled: it takes no new items`)

    upstream.release("hold stream-running")
    expect(await settled(running.id)).toMatchObject({ status: "completed" })
    const after = (await api("GET", `/v1/streams/${stream.id}`)).body
    expect(after).toMatchObject({ completed_items: 1, cancelled_items: 2, running_items: 0, completion_ratio: 1 })
    expect(upstream.arrived.filter((t) => t.startsWith("stream-queued"))).toEqual([])

    const archived = await api("PATCH", `/v1/streams/${stream.id}`, { status: "archived" })
    expect(archived.body).toMatchObject({ status: "archived" })
    expect(typeof archived.body.archived_at).toBe("string")
    const rename = await api("PATCH", `/v1/streams/${stream.id}`, { name: "no" })
    expect(rename.status).toBe(409)
  })

  it("an item that has not started within its stream's window fails as expired, on the actors' clock", async () => {
    const stream = (await api("POST", "/v1/streams", { name: "short", window: "15m" })).body
    const blocker = (await create({ input: "hold window-blocker", background: true })).body
    await held("hold window-blocker")
    const late = (await create({ input: "waits too long", metadata: { stream_id: stream.id } })).body
    await sluice.adjust(16 * 60_000)
    const failed = await settled(late.id)
    expect(failed, JSON.stringify(failed)).toMatchObject({ status: "failed", error: { code: "batch_expired" } })
    upstream.release("hold window-blocker")
    await settled(blocker.id)
    expect(upstream.arrived).not.toContain("waits too long")
    expect((await api("GET", `/v1/streams/${stream.id}`)).body).toMatchObject({ failed_items: 1, total_items: 1 })
  })

  it("an account demoted from internal reads, cancels and archives its stream, and creates no new queued work (403)", async () => {
    const id = `acct_demoted_${onNats ? "n" : "e"}`
    const own = client(() => sluice.url, await otherKey(id)).call
    const stream = (await own("POST", "/v1/streams", { name: "before" })).body
    expect((await api.admin("PATCH", `/admin/v1/accounts/${id}`, { tier: "standard" })).status).toBe(200)
    expect((await own("GET", `/v1/streams/${stream.id}`)).status).toBe(200)
    expect((await own("GET", "/v1/streams")).body.items.map((s: { id: string }) => s.id)).toEqual([stream.id])
    expect((await own("PATCH", `/v1/streams/${stream.id}`, { status: "cancelled" })).body.status).toBe("cancelled")
    expect((await own("POST", "/v1/streams", { name: "after" })).status).toBe(403)
    expect((await own("POST", "/v1/responses", { model: MODEL, input: "x", background: true })).status).toBe(403)
  })

  it("bad input changes nothing: one line naming the field", async () => {
    const cases: ReadonlyArray<readonly [string, string, object, number, string | null]> = [
      ["POST", "/v1/streams", {}, 400, "name"],
      ["POST", "/v1/streams", { name: "x", window: "2h" }, 400, "window"],
      ["POST", "/v1/responses", { model: MODEL, input: "x", metadata: { stream_id: "stream_nope" } }, 404, null],
      ["PATCH", "/v1/streams/stream_nope", { name: "x" }, 404, null],
    ]
    for (const [method, path, body, status, param] of cases) {
      const answer = await api(method, path, body)
      expect(answer.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(status)
      expect(answer.body.error.message).not.toContain("\n")
      if (param !== null) expect(answer.body.error.param).toBe(param)
    }
    const stream = (await api("POST", "/v1/streams", { name: "patch me" })).body
    const reopen = await api("PATCH", `/v1/streams/${stream.id}`, { status: "open" })
    expect(reopen.status).toBe(400)
    expect(reopen.body.error.param).toBe("status")
    expect((await api("GET", `/v1/streams/${stream.id}`)).body.status).toBe("open")
    expect((await api("GET", "/v1/responses?limit=0")).body.error.param).toBe("limit")
  })
})
