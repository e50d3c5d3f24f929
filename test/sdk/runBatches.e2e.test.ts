import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { ADMIN_TOKEN } from "../support/sluice.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"
import { type Batch, type BatchRequest, SluiceAdmin, SluiceClient, type SluiceClientOptions } from "sluice/sdk"

/*
 * submitBatchesOnce and runBatches against a real server whose actors run on a TestClock: a row
 * answered 503 once waits for its retry until the test moves the clock, so a run can be stopped while
 * its batch runs.
 */

const MODEL = "glm-5.3-flash"
const OTHER = "qwen3.6-35b"
const PAST_ANY_BACKOFF_MS = 5 * 60_000

const f = withSluice({
  models: (url) => [
    { id: MODEL, upstream_url: url, batch_concurrency: 2 },
    { id: OTHER, upstream_url: url, batch_concurrency: 2 },
  ],
  sluice: { testClock: {} },
})

let baseUrl: string
let dir: string
let accounts = 0
let runs = 0

beforeAll(() => {
  baseUrl = `${f.sluice.url}/v1`
  dir = mkdtempSync(join(tmpdir(), "sdk-run-"))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A client of a new account of its own, so that its batch list is its test's alone. */
const newClient = async (options: Partial<SluiceClientOptions> = {}) => {
  const admin = new SluiceAdmin({ adminToken: ADMIN_TOKEN, baseUrl })
  const id = `run-${++accounts}-${Math.random().toString(36).slice(2, 8)}`
  await admin.accounts.create({ id, tier: "internal" })
  return new SluiceClient({ apiKey: (await admin.keys.create(id)).key, baseUrl, retryBaseDelayMs: 10, ...options })
}

const collect = async <T>(items: AsyncIterable<T>): Promise<Array<T>> => {
  const out: Array<T> = []
  for await (const item of items) out.push(item)
  return out
}

const requests = (...texts: Array<string>): Array<BatchRequest> => {
  const run = ++runs
  return texts.map((t, i) => ({ custom_id: `r-${i}`, content: `run ${run}: ${t}` }))
}

const found = () => {
  const seen: Array<[string, boolean]> = []
  return { seen, onSubmitted: (b: Batch, resumed: boolean) => void seen.push([b.id, resumed]) }
}

describe("submitBatchesOnce", () => {
  it("answers the batches of the same input again and creates nothing; another model or metadata makes new ones", async () => {
    const client = await newClient()
    const rows = requests("one", "two")
    const first = found()
    const [created] = await client.submitBatchesOnce({ requests: rows, model: MODEL }, first)
    const again = found()
    const [same] = await client.submitBatchesOnce({ requests: rows, model: MODEL }, again)
    expect(same!.id).toBe(created!.id)
    expect(first.seen).toEqual([[created!.id, false]])
    expect(again.seen).toEqual([[created!.id, true]])

    const [byModel] = await client.submitBatchesOnce({ requests: rows, model: OTHER })
    const [byMetadata] = await client.submitBatchesOnce({ requests: rows, model: MODEL, metadata: { run: "2" } })
    const ids = (await collect(client.list())).map((b) => b.id)
    expect(ids).toEqual([byMetadata!.id, byModel!.id, created!.id])
  })

  it("a file is keyed by its bytes: one byte more is a new batch", async () => {
    const client = await newClient()
    const file = join(dir, "bytes.jsonl")
    const lines = requests("a", "b").map((r) => JSON.stringify(r))
    writeFileSync(file, `${lines.join("\n")}\n`)
    const [first] = await client.submitBatchesOnce({ inputFile: file, model: MODEL })
    const [same] = await client.submitBatchesOnce({ inputFile: file, model: MODEL })
    writeFileSync(file, `${lines.join("\n")}\n\n`)
    const [other] = await client.submitBatchesOnce({ inputFile: file, model: MODEL })
    expect(same!.id).toBe(first!.id)
    expect(other!.id).not.toBe(first!.id)
  })

  it("an input split into several batches finds each of them again", async () => {
    const client = await newClient({ batchLimits: { maxRows: 2 } })
    const input = { requests: requests("a", "b", "c"), model: MODEL }
    const created = await client.submitBatchesOnce(input)
    expect(created.map((b) => b.request_counts.total)).toEqual([2, 1])
    const again = found()
    const same = await client.submitBatchesOnce(input, again)
    expect(same.map((b) => b.id)).toEqual(created.map((b) => b.id))
    expect(again.seen.map(([, resumed]) => resumed)).toEqual([true, true])
    const lines = await collect(client.runBatches(input, { pollInterval: 50 }))
    expect(lines.map((l) => l.custom_id)).toEqual(["r-0", "r-1", "r-2"])
    expect((await collect(client.list())).length).toBe(2)
  })
})

describe("runBatches", () => {
  it("yields every result line once its batch is final, as results() has them, and onProgress sees the final batch", async () => {
    const client = await newClient()
    const statuses: Array<string> = []
    const input = { requests: requests("fine", `refused ${simDirective.status(400)}`), model: MODEL }
    const lines = await collect(client.runBatches(input, { pollInterval: 50, onProgress: (b) => void statuses.push(b.status) }))
    const [batch] = await collect(client.list())
    expect(lines).toEqual(await collect(client.results(batch!.id)))
    expect(lines.map((l) => l.status)).toEqual(["completed", "failed"])
    expect(statuses.at(-1)).toBe("completed")
  })

  it("a run stopped while its batch runs, started again with the same input, follows the same batch and no row runs twice", async () => {
    const client = await newClient()
    const input = { requests: requests("a", "b", `flaky ${simDirective.fail(1, 503)}`), model: MODEL }
    const received = f.sim.stats().received
    const stop = new AbortController()
    let seen: Batch | undefined
    const first = collect(
      client.runBatches(input, { pollInterval: 50, signal: stop.signal, onProgress: (b) => void (seen = b) }),
    ).catch((error: unknown) => error)
    await waitFor("two rows done", () => seen?.request_counts.completed === 2)
    stop.abort(new Error("stopped by the test"))
    expect(await first).toMatchObject({ message: "stopped by the test" })
    expect(seen!.status).toBe("in_progress")

    const again = found()
    const second = collect(client.runBatches(input, { pollInterval: 50, onSubmitted: again.onSubmitted }))
    await waitFor("the second run to find the batch", () => again.seen.length === 1)
    expect(again.seen).toEqual([[seen!.id, true]])
    await f.sluice.adjust(PAST_ANY_BACKOFF_MS)
    const lines = await second
    expect(lines.map((l) => [l.custom_id, l.status])).toEqual([
      ["r-0", "completed"],
      ["r-1", "completed"],
      ["r-2", "completed"],
    ])
    expect((await collect(client.list())).map((b) => b.id)).toEqual([seen!.id])
    // Each row reached the model once, and the flaky one once more for its retry.
    expect(f.sim.stats().received - received).toBe(4)
  })
})
