import { Either } from "effect"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DefaultCreateLimits } from "../../src/domain/batch/createLimits.js"
import { MAX_BODY_BYTES } from "../../src/http/body.js"
import { simDirective } from "../../src/sim/Directives.js"
import { ADMIN_TOKEN } from "../support/sluice.js"
import { withSluice } from "../support/withSluice.js"
import {
  type Batch,
  BatchInputError,
  type BatchStreamEvent,
  PartialSubmitError,
  resultLineFromEvent,
  serverBatchLimits,
  SluiceAdmin,
  SluiceApiError,
  SluiceClient,
  type SluiceClientOptions,
  splitBatches,
  WaitTimeoutError,
} from "sluice/sdk"
import { rejection } from "../support/rejection.js"

const MODEL = "glm-5.3-flash"
/** One row at a time, so that a batch's later rows are still queued while its first runs. */
const SLOW = "slow-model"
/** Holds one row for a minute: the batches behind it stay unfinished. */
const HOLD = "hold-model"

const f = withSluice({
  models: (url) => [
    { id: MODEL, upstream_url: url, batch_concurrency: 8 },
    { id: SLOW, upstream_url: url, upstream_model: MODEL, batch_concurrency: 1 },
    { id: HOLD, upstream_url: url, upstream_model: MODEL, batch_concurrency: 1 },
  ],
  // The held row would keep a graceful stop waiting for it.
  teardown: "kill",
})
let baseUrl: string
let admin: SluiceAdmin
let dir: string

beforeAll(() => {
  baseUrl = `${f.sluice.url}/v1`
  admin = new SluiceAdmin({ adminToken: ADMIN_TOKEN, baseUrl })
  dir = mkdtempSync(join(tmpdir(), "sdk-e2e-"))
})

afterAll(() => rmSync(dir, { recursive: true, force: true }))

interface Call {
  readonly method: string
  readonly url: string
  readonly status: number
  readonly bytes: number
}

const recordingFetch = (onResponse?: (call: Call) => Promise<void>) => {
  const calls: Array<Call> = []
  const recording: typeof fetch = async (input, init) => {
    const response = await fetch(input, init)
    const call = {
      method: init?.method ?? "GET",
      url: String(input),
      status: response.status,
      bytes: typeof init?.body === "string" ? Buffer.byteLength(init.body) : 0,
    }
    calls.push(call)
    await onResponse?.(call)
    return response
  }
  return { calls, fetch: recording }
}

let accounts = 0
/** A key of a new internal account of its own, so that its batch list is its test's alone. */
const newKey = async (settings: { daily_quota_usd?: number } = {}) => {
  const id = `sdk-${++accounts}`
  await admin.accounts.create({ id, tier: "internal", ...settings })
  return (await admin.keys.create(id)).key
}
const clientOf = (apiKey: string, options: Partial<SluiceClientOptions> = {}) =>
  new SluiceClient({ apiKey, baseUrl, retryBaseDelayMs: 10, ...options })
const newClient = async (options: Partial<SluiceClientOptions> = {}, settings: { daily_quota_usd?: number } = {}) =>
  clientOf(await newKey(settings), options)

const finish = (client: SluiceClient, id: string) => client.waitForCompletion(id, { pollInterval: 50, timeout: 60_000 })

const collect = async <T>(items: AsyncIterable<T>): Promise<Array<T>> => {
  const out: Array<T> = []
  for await (const item of items) out.push(item)
  return out
}

const answerOf = (line: { response: { body: unknown } | null }) =>
  (line.response?.body as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content

describe("submitting batches", () => {
  it("submitBatch reads a JSONL file with all three line forms (a Responses body included), and the batch runs to completed", async () => {
    const client = await newClient()
    const file = join(dir, "three-forms.jsonl")
    writeFileSync(
      file,
      [
        JSON.stringify({ custom_id: "env", method: "POST", url: "/v1/chat/completions", body: { model: MODEL, messages: [{ role: "user", content: "Envelope line" }] } }),
        "",
        JSON.stringify({ body: { messages: [{ role: "user", content: "Bare line" }], max_tokens: 20 } }),
        JSON.stringify({ custom_id: "c", content: "Content line" }),
        JSON.stringify({ custom_id: "resp", method: "POST", url: "/v1/responses", body: { input: "Responses line", instructions: "Be brief.", max_output_tokens: 30 } }),
      ].join("\n") + "\n",
    )
    const created = await client.submitBatch({ inputFile: file, model: MODEL, metadata: { source: "file" } })
    expect(created).toMatchObject({ object: "batch", status: "validating", request_counts: { total: 4, completed: 0, failed: 0 }, metadata: { source: "file" } })

    const seen: Array<string> = []
    const done = await client.waitForCompletion(created.id, { pollInterval: 50, timeout: 60_000, onProgress: (b) => seen.push(b.status) })
    expect(done).toMatchObject({ id: created.id, status: "completed", request_counts: { total: 4, completed: 4, failed: 0 } })
    expect(seen.at(-1)).toBe("completed")

    const lines = await collect(client.results(created.id))
    expect(lines.map((l) => [l.id, l.custom_id, l.status])).toEqual([
      ["batch_req_1", "env", "completed"],
      ["batch_req_2", "line-3", "completed"],
      ["batch_req_3", "c", "completed"],
      ["batch_req_4", "resp", "completed"],
    ])
    expect(lines.map(answerOf)).toEqual([
      expect.stringContaining("Envelope line"),
      expect.stringContaining("Bare line"),
      expect.stringContaining("Content line"),
      expect.stringContaining("Responses line"),
    ])
  })

  it("submitBatch takes requests by the same rules and refuses input it cannot read, naming the line", async () => {
    const client = await newClient()
    const created = await client.submitBatch({
      requests: [{ content: "one" }, { custom_id: "two", body: { model: MODEL, messages: [{ role: "user", content: "two" }] } }],
      model: MODEL,
    })
    const lines = await collect(client.results((await finish(client, created.id)).id))
    expect(lines.map((l) => [l.custom_id, l.status])).toEqual([["line-1", "completed"], ["two", "completed"]])

    const noModel = await rejection(client.submitBatch({ requests: [{ body: { model: MODEL, messages: [] } }, { content: "x" }] }))
    expect(noModel).toBeInstanceOf(BatchInputError)
    expect(noModel).toMatchObject({ line: 2, message: "requests: line 2: a content-only line needs a model: pass --model (CLI) or model (SDK)" })

    const file = join(dir, "bad.jsonl")
    writeFileSync(file, `${JSON.stringify({ content: "a" })}\n{oops\n`)
    expect(await rejection(client.submitBatch({ inputFile: file, model: MODEL }))).toMatchObject({ line: 2, message: expect.stringMatching(/^.*bad\.jsonl: line 2: not valid JSON/) })
    expect((await rejection(client.submitBatch({ model: MODEL }))).message).toBe("Give exactly one of inputFile and requests")
    expect((await rejection(client.submitBatch({ requests: [] }))).message).toBe("requests: no rows to submit")
    expect(await collect(client.list())).toHaveLength(1)
  })

  it("submitBatch refuses rows that need more than one batch, pointing to submitBatches, and creates nothing", async () => {
    const client = await newClient({ batchLimits: { maxRows: 2 } })
    const error = await rejection(client.submitBatch({ requests: [{ content: "a" }, { content: "b" }, { content: "c" }], model: MODEL }))
    expect(error).toBeInstanceOf(BatchInputError)
    expect(error.message).toBe("The 3 rows need 2 batches (at most 2 rows and 33554432 bytes each); use submitBatches to submit them as several")
    expect(await collect(client.list())).toEqual([])
  })

  it("the default limits are the server's: 50,001 rows need two batches, and a 33 MiB row fits none", async () => {
    expect(serverBatchLimits).toEqual({ maxRows: DefaultCreateLimits.maxRequests, maxBodyBytes: MAX_BODY_BYTES })
    const rows = [{ custom_id: "a", body: {} }, { custom_id: "b", body: {} }]
    expect(splitBatches(rows)).toEqual(Either.right([rows]))

    const client = await newClient()
    const many = Array.from({ length: 50_001 }, (_, i) => ({ content: `row ${i}` }))
    expect((await rejection(client.submitBatch({ requests: many, model: MODEL }))).message).toMatch(/^The 50001 rows need 2 batches \(at most 50000 rows/)
    const huge = [{ custom_id: "huge", content: "x".repeat(33 * 1024 * 1024) }]
    const tooLarge = await rejection(client.submitBatches({ requests: huge, model: MODEL }))
    expect(tooLarge).toBeInstanceOf(BatchInputError)
    expect(tooLarge.message).toMatch(/^Row "huge" is \d+ bytes: no create body of at most 33554432 bytes can hold it/)
  })

  it("submitBatches cuts by rows and by bytes, creating the parts in order, each within both limits", async () => {
    const ids = Array.from({ length: 7 }, (_, i) => `r${i}`)
    const requests = ids.map((custom_id, i) => ({ custom_id, content: `${custom_id} ${"z".repeat(i * 40)}` }))
    const readBack = async (client: SluiceClient, batches: ReadonlyArray<Batch>) => {
      const lines: Array<string> = []
      for (const batch of batches) {
        expect((await finish(client, batch.id)).status).toBe("completed")
        for await (const line of client.results(batch.id)) lines.push(line.custom_id)
      }
      return lines
    }

    const byRows = await newClient({ batchLimits: { maxRows: 3 } })
    const parts = await byRows.submitBatches({ requests, model: MODEL, metadata: { run: "rows" } })
    expect(parts.map((b) => b.request_counts.total)).toEqual([3, 3, 1])
    expect(parts.every((b) => b.metadata?.["run"] === "rows")).toBe(true)
    expect(await readBack(byRows, parts)).toEqual(ids)

    const maxBodyBytes = 600
    const sent = recordingFetch()
    const byBytes = await newClient({ batchLimits: { maxBodyBytes }, fetch: sent.fetch })
    const small = await byBytes.submitBatches({ requests, model: MODEL, metadata: { run: "bytes" } })
    const creates = sent.calls.filter((c) => c.method === "POST" && c.url.endsWith("/v1/batches"))
    expect(creates.length).toBe(small.length)
    expect(small.length).toBeGreaterThan(2)
    for (const create of creates) expect(create.bytes).toBeLessThanOrEqual(maxBodyBytes)
    expect(await readBack(byBytes, small)).toEqual(ids)
  })

  it("submitBatches failing part-way names the batches it had created", async () => {
    const client = await newClient({ batchLimits: { maxRows: 2 } })
    const good = (id: string) => ({ custom_id: id, body: { model: MODEL, messages: [{ role: "user", content: id }] } })
    const error = await rejection(
      client.submitBatches({ requests: [good("a"), good("b"), good("c"), { custom_id: "empty", body: { model: MODEL, messages: [] } }] }),
    )
    expect(error).toBeInstanceOf(PartialSubmitError)
    const partial = error as PartialSubmitError
    expect(partial.created.map((b) => b.request_counts.total)).toEqual([2])
    const [first] = partial.created
    expect(partial.message).toContain(`Created 1 of 2 batches (${first?.id}) before batch 2 failed`)
    expect(partial.cause).toBeInstanceOf(SluiceApiError)
    expect((await client.getBatch(first?.id ?? "")).id).toBe(first?.id)
    expect(await collect(client.list())).toHaveLength(1)
  })
})

describe("following, cancelling and deleting a batch", () => {
  it("waitForCompletion times out with the batch's id, status and counts; cancel stops it; delete removes it", async () => {
    const client = await newClient()
    const created = await client.submitBatch({
      requests: [1, 2, 3].map((i) => ({ content: `slow ${i} ${simDirective.latency(1_500)}` })),
      model: SLOW,
    })
    const timedOut = await rejection(client.waitForCompletion(created.id, { pollInterval: 50, timeout: 200 }))
    expect(timedOut).toBeInstanceOf(WaitTimeoutError)
    const wait = timedOut as WaitTimeoutError
    expect(wait.batchId).toBe(created.id)
    expect(wait.timeoutMs).toBe(200)
    expect(["validating", "in_progress"]).toContain(wait.status)
    expect(wait.requestCounts.total).toBe(3)
    expect(wait.message).toContain(`Batch ${created.id} did not finish within the timeout of 200 ms: it is still ${wait.status}`)

    const cancelling = await client.cancel(created.id)
    expect(["cancelling", "cancelled"]).toContain(cancelling.status)
    const cancelled = await finish(client, created.id)
    expect(cancelled.status).toBe("cancelled")
    const lines = await collect(client.results(created.id))
    expect(lines.filter((l) => l.status === "cancelled").length).toBeGreaterThan(0)

    expect(await client.delete(created.id)).toEqual({ id: created.id, object: "batch.deleted", deleted: true })
    const gone = await rejection(client.getBatch(created.id))
    expect(gone).toBeInstanceOf(SluiceApiError)
    expect(gone).toMatchObject({ status: 404, type: "invalid_request_error", code: "batch_deleted", param: null })
    expect(gone.message).toContain(`Batch '${created.id}' was deleted at `)
  })

  it("SluiceApiError carries the OpenAI envelope's fields of a 400", async () => {
    const client = await newClient()
    const error = await rejection(client.submitBatch({ requests: [{ custom_id: "q", body: { model: MODEL, messages: [] } }] }))
    expect(error).toBeInstanceOf(SluiceApiError)
    expect(error).toMatchObject({ status: 400, type: "invalid_request_error", param: expect.stringMatching(/^requests\[0\]/) })
    expect(error.message).toContain("requests[0] (custom_id 'q')")
  })

  it("results pages through every line in submission order, whatever the page size", async () => {
    const sent = recordingFetch()
    const client = await newClient({ fetch: sent.fetch })
    const created = await client.submitBatch({ requests: ["a", "b", "c", "d", "e"].map((custom_id) => ({ custom_id, content: custom_id })), model: MODEL })
    await finish(client, created.id)
    const before = sent.calls.length
    const paged = await collect(client.results(created.id, { pageSize: 2 }))
    expect(sent.calls.slice(before).map((c) => new URL(c.url).search)).toEqual(["?limit=2", "?limit=2&after=batch_req_2", "?limit=2&after=batch_req_4"])
    expect(paged.map((l) => l.id)).toEqual(["batch_req_1", "batch_req_2", "batch_req_3", "batch_req_4", "batch_req_5"])
    expect(paged.map((l) => l.custom_id)).toEqual(["a", "b", "c", "d", "e"])
    expect(await collect(client.results(created.id))).toEqual(paged)
  })

  it("list iterates every batch of the account across pages, newest first", async () => {
    const sent = recordingFetch()
    const client = await newClient({ fetch: sent.fetch })
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) ids.push((await client.submitBatch({ requests: [{ content: `list ${i}` }], model: MODEL })).id)
    const before = sent.calls.length
    const listed = await collect(client.list({ limit: 2 }))
    expect(listed.map((b) => b.id)).toEqual([...ids].reverse())
    expect(sent.calls.slice(before).length).toBe(3)
  })

  it("downloadResultsJsonl writes the results.jsonl, one result line per line", async () => {
    const client = await newClient()
    const created = await client.submitBatch({ requests: ["x", "y", "z"].map((custom_id) => ({ custom_id, content: custom_id })), model: MODEL })
    await finish(client, created.id)
    const out = join(dir, "results.jsonl")
    const written = await client.downloadResultsJsonl(created.id, { out })
    const text = readFileSync(out, "utf8")
    expect(written).toEqual({ lines: 3, bytes: Buffer.byteLength(text) })
    expect(text.trimEnd().split("\n").map((l) => JSON.parse(l))).toEqual(await collect(client.results(created.id)))
  })

  it("streamEvents follows a batch to its end, and resumes after an event id", async () => {
    const client = await newClient()
    const created = await client.submitBatch({ requests: ["p", "q", "r"].map((custom_id) => ({ custom_id, content: custom_id })), model: MODEL })
    const events: Array<BatchStreamEvent> = await collect(client.streamEvents(created.id))
    const types = events.map((e) => e.type)
    expect(types[0]).toBe("rows_added")
    expect(types).toContain("batch_created")
    expect(types.filter((t) => t === "row_completed")).toHaveLength(3)
    expect(types.at(-1)).toBe("batch_completed")
    const rowsAdded = events[0]
    if (rowsAdded?.type !== "rows_added") throw new Error("expected rows_added first")
    expect(rowsAdded.data.rows).toEqual(["p", "q", "r"].map((custom_id) => ({ custom_id, model: MODEL })))

    const fromEvents = events.flatMap((e) => resultLineFromEvent(e) ?? []).sort((a, b) => a.id.localeCompare(b.id))
    expect(fromEvents).toEqual(await collect(client.results(created.id)))

    const resumed = await collect(client.streamEvents(created.id, { lastEventId: events[1]?.id ?? "" }))
    expect(resumed).toEqual(events.slice(2))
  })
})

describe("retries and refusals from a real Sluice", () => {
  it("a create refused for too many unfinished batches is retried, and succeeds once a place is free", async () => {
    const key = await newKey()
    const holder = clientOf(key)
    const held: Array<Batch> = []
    for (let i = 0; i < 10; i++) {
      held.push(await holder.submitBatch({ requests: [{ content: `hold ${i} ${simDirective.latency(60_000)}` }], model: HOLD }))
    }
    const last = held[9]!
    const sent = recordingFetch(async (call) => {
      // Only after the refusal has been answered does a place free up: the retry must be what succeeds.
      if (call.status === 429) await holder.cancel(last.id)
    })
    const client = clientOf(key, { fetch: sent.fetch })
    const created = await client.submitBatch({ requests: [{ content: "after the limit" }], model: MODEL })
    expect(sent.calls.map((c) => `${c.method} ${c.status}`)).toEqual(["POST 429", "POST 200"])
    expect((await holder.getBatch(last.id)).status).toBe("cancelled")
    expect((await finish(client, created.id)).status).toBe("completed")

    const refused = recordingFetch()
    const noRoom = clientOf(key, { retryBaseDelayMs: 1, maxRetries: 2, fetch: refused.fetch })
    await holder.submitBatch({ requests: [{ content: `hold again ${simDirective.latency(60_000)}` }], model: HOLD })
    const error = await rejection(noRoom.submitBatch({ requests: [{ content: "no room" }], model: MODEL }))
    expect(error).toMatchObject({ status: 429, type: "rate_limit_error", code: "too_many_unfinished_batches" })
    expect(refused.calls.map((c) => c.status)).toEqual([429, 429, 429])
    for (const batch of held) await holder.cancel(batch.id)
  })

  it("a used-up daily quota (429 insufficient_quota) is thrown at once, not retried", async () => {
    const sent = recordingFetch()
    const client = await newClient({ fetch: sent.fetch }, { daily_quota_usd: 0 })
    const error = await rejection(client.getBatch("batch_any"))
    expect(error).toMatchObject({ status: 429, type: "insufficient_quota", code: "insufficient_quota" })
    expect(sent.calls).toHaveLength(1)
  })
})

describe("constructing clients", () => {
  it("a client without an API key says how to give one; the environment supplies key and base URL", async () => {
    const saved = { key: process.env["SLUICE_API_KEY"], url: process.env["SLUICE_BASE_URL"], admin: process.env["SLUICE_ADMIN_TOKEN"] }
    try {
      delete process.env["SLUICE_API_KEY"]
      delete process.env["SLUICE_ADMIN_TOKEN"]
      expect(() => new SluiceClient()).toThrow("SluiceClient needs an API key: pass { apiKey } or set SLUICE_API_KEY")
      expect(() => new SluiceAdmin()).toThrow("SluiceAdmin needs the admin token: pass { adminToken } or set SLUICE_ADMIN_TOKEN")
      await admin.accounts.create({ id: "sdk-env", tier: "internal" })
      process.env["SLUICE_API_KEY"] = (await admin.keys.create("sdk-env")).key
      process.env["SLUICE_BASE_URL"] = baseUrl
      process.env["SLUICE_ADMIN_TOKEN"] = ADMIN_TOKEN
      expect(await collect(new SluiceClient().list())).toEqual([])
      expect(await new SluiceAdmin().accounts.update("sdk-env", { concurrency: 3 })).toMatchObject({ id: "sdk-env", concurrency: 3 })
    } finally {
      for (const [name, value] of [["SLUICE_API_KEY", saved.key], ["SLUICE_BASE_URL", saved.url], ["SLUICE_ADMIN_TOKEN", saved.admin]] as const) {
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
      }
    }
  })
})

describe("SluiceAdmin", () => {
  it("creates, updates, suspends, activates and deletes accounts, and creates and revokes keys", async () => {
    expect(await admin.accounts.create({ id: "sdk-admin", tier: "internal", models: [MODEL], daily_quota_usd: 5 })).toEqual({
      id: "sdk-admin",
      tier: "internal",
      status: "active",
      daily_quota_usd: 5,
      concurrency: null,
      models: [MODEL],
      max_priority: "standard",
    })
    expect(await rejection(admin.accounts.create({ id: "sdk-admin" }))).toMatchObject({ status: 409, code: "conflict" })
    expect(await admin.accounts.update("sdk-admin", { concurrency: 2, daily_quota_usd: null })).toMatchObject({ concurrency: 2, daily_quota_usd: null })

    const key = await admin.keys.create("sdk-admin", { expires_at: null })
    expect(key).toMatchObject({ id: expect.stringMatching(/^key_/), key: expect.any(String), expires_at: null })
    const client = new SluiceClient({ apiKey: key.key, baseUrl, maxRetries: 0 })
    expect(await collect(client.list())).toEqual([])

    expect(await admin.accounts.suspend("sdk-admin")).toMatchObject({ status: "suspended" })
    expect(await rejection(collect(client.list()))).toMatchObject({ status: 401, type: "authentication_error" })
    expect(await admin.accounts.activate("sdk-admin")).toMatchObject({ status: "active" })
    expect(await collect(client.list())).toEqual([])

    expect(await admin.keys.revoke(key.id)).toEqual({ id: key.id, revoked: true })
    expect(await rejection(collect(client.list()))).toMatchObject({ status: 401 })

    const second = await admin.keys.create("sdk-admin")
    expect(await admin.accounts.delete("sdk-admin")).toMatchObject({ status: "deleted" })
    expect(await rejection(new SluiceClient({ apiKey: second.key, baseUrl, maxRetries: 0 }).getBatch("b"))).toMatchObject({ status: 401 })

    expect(await rejection(admin.accounts.update("no-such-account", { tier: "standard" }))).toMatchObject({ status: 404 })
    expect(await rejection(admin.keys.revoke("key_missing"))).toMatchObject({ status: 404 })
    expect(await rejection(new SluiceAdmin({ adminToken: "wrong", baseUrl }).accounts.create({ id: "x" }))).toMatchObject({ status: 401 })
  })
})
