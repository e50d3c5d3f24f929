import { beforeAll, describe, expect, it } from "vitest"
import { ADMIN_TOKEN } from "../support/sluice.js"
import { withSluice } from "../support/withSluice.js"
import { SluiceAdmin, SluiceApiError, SluiceClient } from "sluice/sdk"
import { rejection } from "../support/rejection.js"

/** The SDK's `priority` on every create and the admin's `max_priority`, against a real server over loopback. */

const MODEL = "glm-5.3-flash"
const f = withSluice({
  inProcess: true,
  simulator: { models: [MODEL], latencyMs: 2 },
  models: (url) => [{ id: MODEL, upstream_url: url, batch_concurrency: 4 }],
})
const requests = (prefix: string) =>
  Array.from({ length: 2 }, (_, i) => ({ custom_id: `${prefix}-${i}`, body: { model: MODEL, messages: [{ role: "user", content: `${prefix} ${i}` }] } }))
let admin: SluiceAdmin
let client: SluiceClient

beforeAll(async () => {
  const baseUrl = `${f.sluice.url}/v1`
  admin = new SluiceAdmin({ adminToken: ADMIN_TOKEN, baseUrl })
  expect(await admin.accounts.create({ id: "sdk-priority", tier: "internal" })).toMatchObject({ id: "sdk-priority", max_priority: "standard" })
  client = new SluiceClient({ apiKey: (await admin.keys.create("sdk-priority")).key, baseUrl, maxRetries: 0 })
})

describe("priority through the SDK", () => {
  it("a create above the account's max_priority throws a 403 naming priority until SluiceAdmin raises it", async () => {
    const refused = await rejection(client.submitBatch({ requests: requests("above"), priority: "high" }))
    expect(refused).toBeInstanceOf(SluiceApiError)
    expect(refused).toMatchObject({ status: 403, type: "permission_error", code: "forbidden", param: "priority" })
    expect((await client.estimate({ requests: requests("above"), priority: "high" })).fits.priority).toBe(false)

    expect(await admin.accounts.update("sdk-priority", { max_priority: "high" })).toMatchObject({ max_priority: "high", tier: "internal" })
    expect((await client.estimate({ requests: requests("above"), priority: "high" })).fits.priority).toBe(true)
    expect((await client.submitBatch({ requests: requests("above"), priority: "high" })).priority).toBe("high")
  })

  it("batches inline, split, once-only and from a file take a priority; a rerun keeps it or names another", async () => {
    const [split] = await client.submitBatches({ requests: requests("split"), priority: "background" })
    expect(split!.priority).toBe("background")
    expect((await client.submitBatch({ requests: requests("plain") })).priority).toBe("standard")

    // The priority is part of what a once-only submission's keys derive from: another priority is another batch.
    const [once] = await client.submitBatchesOnce({ requests: requests("once"), priority: "high" })
    const [again] = await client.submitBatchesOnce({ requests: requests("once"), priority: "high" })
    expect(again!.id).toBe(once!.id)
    const [other] = await client.submitBatchesOnce({ requests: requests("once"), priority: "background" })
    expect(other!.id).not.toBe(once!.id)
    expect(other!.priority).toBe("background")

    const file = await client.uploadFile({ file: Buffer.from(requests("file").map((r) => JSON.stringify({ ...r, url: "/v1/chat/completions" })).join("\n")) })
    const fromFile = await client.createBatch({ input_file_id: file.id, endpoint: "/v1/chat/completions", priority: "background" })
    expect(fromFile).toMatchObject({ input_file_id: file.id, priority: "background" })
    expect((await client.estimate({ input_file_id: file.id, endpoint: "/v1/chat/completions", priority: "high" })).fits.priority).toBe(true)

    const done = await client.waitForCompletion(once!.id, { pollInterval: 20, timeout: 30_000 })
    expect(done.priority).toBe("high")
    expect((await client.rerun(done.id, { statuses: ["completed"] })).priority).toBe("high")
    expect((await client.rerun(done.id, { statuses: ["completed"], priority: "background" })).priority).toBe("background")
  })

  it("a background response and a stream take a priority; the stream's items inherit it", async () => {
    const response = await client.createResponse({ model: MODEL, input: "hi", background: true, priority: "high" })
    expect(response).toMatchObject({ status: "in_progress", priority: "high" })
    expect((await client.getResponse(response.id)).priority).toBe("high")

    const stream = await client.createStream({ name: "sdk", priority: "background" })
    expect(stream.priority).toBe("background")
    expect((await client.getStream(stream.id)).priority).toBe("background")
    expect((await client.listStreams()).find((s) => s.id === stream.id)?.priority).toBe("background")
    const item = await client.createResponse({ model: MODEL, input: "item", metadata: { stream_id: stream.id } })
    expect(item.priority).toBe("background")
    const sent = new Map<string, string | undefined>()
    await client.submitToStream(stream.id, { requests: requests("own"), priority: "high" }, { onSent: (r, customId) => sent.set(customId, r.priority) })
    await client.submitToStream(stream.id, { requests: requests("inherited") }, { onSent: (r, customId) => sent.set(customId, r.priority) })
    expect(Object.fromEntries(sent)).toEqual({ "own-0": "high", "own-1": "high", "inherited-0": "background", "inherited-1": "background" })

    const flex = await rejection(client.createResponse({ model: MODEL, input: "hi", service_tier: "flex", priority: "high" }))
    expect(flex).toMatchObject({ status: 400, param: "priority" })
  })
})
