import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { withSluice } from "../support/withSluice.js"
import { type CompletionEvent, fileCheckpoints, SluiceAdmin, SluiceClient } from "sluice/sdk"
import { ADMIN_TOKEN } from "../support/sluice.js"

/*
 * The SDK's iterResponsesEvents against a real server: a consumer that stops part-way resumes from its
 * checkpoint, at least once and with no gap, and a following one gets each completion as it comes.
 */

const MODEL = "glm-5.3-flash"
const f = withSluice({ models: (url) => [{ id: MODEL, upstream_url: url, batch_concurrency: 4 }] })
let dir: string
let baseUrl: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "sdk-events-"))
  baseUrl = `${f.sluice.url}/v1`
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const newClient = async () => {
  const admin = new SluiceAdmin({ adminToken: ADMIN_TOKEN, baseUrl })
  const account = await admin.accounts.create({ id: `acct-${Math.random().toString(36).slice(2, 10)}`, tier: "internal" })
  const { key } = await admin.keys.create(account.id)
  return new SluiceClient({ apiKey: key, baseUrl })
}

const runBatch = async (client: SluiceClient, prefix: string, n: number) => {
  const requests = Array.from({ length: n }, (_, i) => ({ custom_id: `${prefix}-${i}`, content: `${prefix} ${i}` }))
  const batch = await client.submitBatch({ requests, model: MODEL })
  await client.waitForCompletion(batch.id, { pollInterval: 50, timeout: 60_000 })
}

const take = async (events: AsyncIterableIterator<CompletionEvent>, n: number) => {
  const got: Array<CompletionEvent> = []
  for await (const event of events) {
    got.push(event)
    if (got.length === n) break
  }
  return got
}

describe("SluiceClient.iterResponsesEvents", () => {
  it("resumes a consumer from its checkpoint file: the event it stopped on comes again, then the rest, none missing", async () => {
    const client = await newClient()
    const file = join(dir, "checkpoints.json")
    await runBatch(client, "a", 5)
    const all = [...(await client.listResponsesEvents({ limit: 100 })).data].reverse()
    expect(all.map((e) => e.custom_id).sort()).toEqual(["a-0", "a-1", "a-2", "a-3", "a-4"])

    // A new consumer starts with the newest page, oldest first; it stops having handled three.
    const first = await take(client.iterResponsesEvents({ consumer: "sdk", checkpoint: fileCheckpoints(file) }), 3)
    expect(first).toEqual(all.slice(0, 3))
    const key = `${baseUrl}:__responses_events__:sdk`
    expect(JSON.parse(readFileSync(file, "utf8"))[key]).toEqual({ last_completion_id: all[1]!.completion_id, updated_at: expect.any(String) })

    await runBatch(client, "b", 2)
    const later = [...(await client.listResponsesEvents({ limit: 100 })).data].reverse()
    expect(later.slice(0, 5)).toEqual(all)
    const rest: Array<CompletionEvent> = []
    for await (const event of client.iterResponsesEvents({ consumer: "sdk", checkpoint: fileCheckpoints(file) })) rest.push(event)
    expect(rest).toEqual(later.slice(2))
    expect(JSON.parse(readFileSync(file, "utf8"))[key].last_completion_id).toBe(later[later.length - 1]!.completion_id)

    // fromLatest forgets the checkpoint and starts with the newest page.
    const latest = await take(client.iterResponsesEvents({ consumer: "sdk", checkpoint: fileCheckpoints(file), fromLatest: true, pageSize: 2 }), 2)
    expect(latest).toEqual(later.slice(-2))
  })

  it("with follow, waits for the next completion and yields it", async () => {
    const client = await newClient()
    await runBatch(client, "before", 1)
    const [seen] = (await client.listResponsesEvents()).data
    const events = client.iterResponsesEvents({ checkpoint: false, follow: true, startingAfter: seen!.completion_id, waitMs: 25_000 })
    const next = events.next()
    await runBatch(client, "after", 1)
    const got = await next
    expect(got.done).toBe(false)
    expect(got.value).toMatchObject({ custom_id: "after-0", status: "completed", response_id: null })
    await events.return?.()
  })
})
