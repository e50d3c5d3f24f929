import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BatchInputError, SluiceAdmin, SluiceApiError, SluiceClient, StreamSubmitError, type ResponseObject } from "sluice/sdk"
import { startGatedUpstream } from "../support/gatedUpstream.js"
import { ADMIN_TOKEN } from "../support/sluice.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"

/*
 * The SDK's responses and streams against a real server whose model is the test's own upstream: it
 * answers each request with its last message's text, and holds those that start with "hold" until the
 * test lets them go, so a test knows which response runs and which waits.
 */

const MODEL = "gated"
let upstream: Awaited<ReturnType<typeof startGatedUpstream>>
const f = withSluice({
  inProcess: true,
  models: async () => {
    upstream = await startGatedUpstream()
    return [{ id: MODEL, upstream_url: upstream.url, batch_concurrency: 1, timeout_ms: 3_600_000 }]
  },
})
let dir: string
let baseUrl: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "sdk-responses-"))
  baseUrl = `${f.sluice.url}/v1`
})
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await upstream?.close()
})

const newClient = async () => {
  const admin = new SluiceAdmin({ adminToken: ADMIN_TOKEN, baseUrl })
  const account = await admin.accounts.create({ id: `acct-${Math.random().toString(36).slice(2, 10)}`, tier: "internal" })
  const { key } = await admin.keys.create(account.id)
  return new SluiceClient({ apiKey: key, baseUrl })
}

const settled = async (client: SluiceClient, id: string) => {
  let last: ResponseObject | undefined
  await waitFor(`response ${id} to be final`, async () => (last = await client.getResponse(id)).status !== "in_progress")
  return last!
}

const all = async <A>(items: AsyncIterable<A>) => {
  const got: Array<A> = []
  for await (const item of items) got.push(item)
  return got
}

const text = (r: ResponseObject) => r.output.flatMap((item) => (item.type === "message" ? item.content.map((c) => c.text) : [])).join("")

describe("SluiceClient's responses", () => {
  it("createResponse answers a blocking response done, a background one at once; getResponse, listResponses and cancelResponse read and cancel", async () => {
    const client = await newClient()
    const blocking = await client.createResponse({ model: MODEL, input: "plain", metadata: { run: "1" } })
    expect(blocking).toMatchObject({ object: "response", status: "completed", background: false, metadata: { run: "1" } })
    expect(text(blocking)).toBe("echo: plain")

    const running = await client.createResponse({ model: MODEL, input: "hold sdk-running", background: true })
    expect(running).toMatchObject({ status: "in_progress", background: true, output: [] })
    await waitFor("the upstream to hold the running response", () => upstream.isHeld("hold sdk-running"))
    const queued = await client.createResponse({ model: MODEL, input: [{ role: "user", content: "sdk-queued" }], background: true })
    const cancelled = await client.cancelResponse(queued.id)
    expect(cancelled).toMatchObject({ id: queued.id, status: "cancelled" })
    upstream.release("hold sdk-running")
    const done = await settled(client, running.id)
    expect(text(done)).toBe("echo: hold sdk-running")
    expect(await client.getResponse(queued.id)).toEqual(cancelled)
    expect(upstream.arrived).not.toContain("sdk-queued")

    // Every queued response, newest first, a page of one at a time; the blocking one was never queued.
    const listed = await all(client.listResponses({ limit: 1 }))
    expect(listed.map((r) => r.id)).toEqual([queued.id, running.id])
    expect(listed[1]).toEqual(done)

    const missing = await client.getResponse("resp_missing").catch((error: unknown) => error)
    expect(missing).toBeInstanceOf(SluiceApiError)
    expect(missing).toMatchObject({ status: 404, code: "response_not_found" })
  })

  it("streams: created, listed, read with counters, renamed, cancelled and archived", async () => {
    const client = await newClient()
    const made = await client.createStream({ name: "evals", window: "1h" })
    expect(made).toMatchObject({ object: "stream", name: "evals", window: "1h", status: "open", total_items: 0, completion_ratio: 0 })
    const other = await client.createStream({ name: "other" })
    expect(other.window).toBe("24h")
    expect((await client.listStreams()).map((s) => s.id).sort()).toEqual([made.id, other.id].sort())

    const item = await client.createResponse({ model: MODEL, input: "in a stream", metadata: { stream_id: made.id, custom_id: "only" } })
    expect(item).toMatchObject({ status: "in_progress", metadata: { stream_id: made.id, custom_id: "only" } })
    await settled(client, item.id)
    expect(await client.getStream(made.id)).toMatchObject({ total_items: 1, completed_items: 1, completion_ratio: 1, total_tokens: 8 })
    expect((await all(client.listResponses({ streamId: made.id }))).map((r) => r.id)).toEqual([item.id])

    expect(await client.updateStream(made.id, { name: "evals 2" })).toMatchObject({ name: "evals 2", status: "open" })
    expect(await client.cancelStream(made.id)).toMatchObject({ status: "cancelled", cancelled_at: expect.any(String) })
    expect(await client.archiveStream(made.id)).toMatchObject({ status: "archived", archived_at: expect.any(String) })
    const refused = await client.updateStream(made.id, { name: "again" }).catch((error: unknown) => error)
    expect(refused).toMatchObject({ status: 409 })
  })
})

describe("SluiceClient.submitToStream", () => {
  const lines = [
    { custom_id: "chat", body: { model: MODEL, messages: [{ role: "system", content: "be brief" }, { role: "user", content: "chat line" }], max_tokens: 9 } },
    { content: "content line" },
    { custom_id: "responses", method: "POST", url: "/v1/responses", body: { input: "responses line", instructions: "terse" } },
  ]
  const file = (name: string, rows: ReadonlyArray<object>) => {
    const path = join(dir, name)
    writeFileSync(path, `${rows.map((r) => JSON.stringify(r)).join("\n\n")}\n`)
    return path
  }

  it("sends each line once as a response of the stream, named by its custom_id; the same input again sends nothing", async () => {
    const client = await newClient()
    const stream = await client.createStream({ name: "submit" })
    const sent: Array<[string, string]> = []
    const first = await client.submitToStream(stream.id, { inputFile: file("three.jsonl", lines), model: MODEL, metadata: { run: "a" } }, {
      onSent: (r, customId) => sent.push([customId, r.id]),
    })
    expect(first).toEqual({ streamId: stream.id, lines: 3, skipped: 0, sent: 3 })
    expect(sent.map(([c]) => c).sort()).toEqual(["chat", "line-3", "responses"])
    for (const [, id] of sent) await settled(client, id)

    const items = await all(client.listResponses({ streamId: stream.id }))
    expect(items.map((r) => [r.metadata["custom_id"], r.metadata["stream_id"], r.metadata["run"], r.status]).sort()).toEqual([
      ["chat", stream.id, "a", "completed"],
      ["line-3", stream.id, "a", "completed"],
      ["responses", stream.id, "a", "completed"],
    ])
    // The chat line reached the model as the chat body it is.
    const chat = upstream.bodies.find((b) => JSON.stringify(b).includes("chat line"))
    expect(chat).toMatchObject({ messages: [{ role: "system", content: "be brief" }, { role: "user", content: "chat line" }], max_tokens: 9 })

    let plan: unknown
    const again = await client.submitToStream(stream.id, { inputFile: file("three.jsonl", lines), model: MODEL }, { onPlanned: (p) => (plan = p) })
    expect(again).toEqual({ streamId: stream.id, lines: 3, skipped: 3, sent: 0 })
    expect(plan).toEqual({ lines: 3, skipped: 3 })
    expect((await client.getStream(stream.id)).total_items).toBe(3)
    expect(upstream.arrived.filter((t) => t.endsWith("line")).sort()).toEqual(["chat line", "content line", "responses line"])
  })

  it("a line a Responses request cannot carry is named before anything is sent; a line the server refuses stops the run and is named", async () => {
    const client = await newClient()
    const stream = await client.createStream({ name: "refusals" })
    const unconvertible = await client
      .submitToStream(stream.id, { requests: [{ content: "fine" }, { body: { messages: [{ role: "user", content: "x", name: "ann" }] } }], model: MODEL })
      .catch((error: unknown) => error)
    expect(unconvertible).toBeInstanceOf(BatchInputError)
    expect((unconvertible as BatchInputError).message).toBe(
      "requests: line 2: messages[0].name cannot be carried by a Responses request: its input items have role and content only",
    )
    expect((await client.getStream(stream.id)).total_items).toBe(0)

    const refused = await client
      .submitToStream(stream.id, { requests: [{ custom_id: "ok", content: "fine" }, { custom_id: "bad", body: { model: MODEL, input: "x", temperature: 9 } }], model: MODEL }, { concurrency: 1 })
      .catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(StreamSubmitError)
    expect(refused).toMatchObject({ sent: 1, skipped: 0, line: 2 })
    expect((refused as Error).message).toMatch(/^requests: line 2 \(custom_id "bad"\): POST \S+\/v1\/responses answered 400: .*temperature.*; 1 line sent, 0 in the stream already: run again to send the rest$/)
    expect((await client.getStream(stream.id)).total_items).toBe(1)

    const unknown = await client.submitToStream("stream_missing", { requests: [{ content: "x" }], model: MODEL }).catch((error: unknown) => error)
    expect(unknown).toMatchObject({ status: 404, code: "stream_not_found" })

    await client.cancelStream(stream.id)
    const closed = await client
      .submitToStream(stream.id, { requests: [{ custom_id: "ok", content: "fine" }, { custom_id: "late", content: "late" }], model: MODEL })
      .catch((error: unknown) => error)
    expect(closed).toBeInstanceOf(StreamSubmitError)
    expect((closed as Error).message).toBe(`Stream '${stream.id}' is cancelled and takes no new items: 1 line of the input is not in it`)
    // Everything there already: a closed stream is no obstacle.
    expect(await client.submitToStream(stream.id, { requests: [{ custom_id: "ok", content: "fine" }], model: MODEL })).toMatchObject({ skipped: 1, sent: 0 })
  })
})
