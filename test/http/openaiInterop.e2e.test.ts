import OpenAI from "openai"
import type { BatchUsage } from "openai/resources/batches"
import { beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { chatRow } from "../support/client.js"
import { withSluice } from "../support/withSluice.js"

const MODEL = "glm-5.3-flash"
const SLOW = "slow-model"

/*
 * OpenAI's own SDK, unmodified, pointed at Sluice: the batch objects, list pages and error envelope
 * are close enough to OpenAI's for batches.retrieve, batches.list (auto-pagination) and
 * batches.cancel. batches.create cannot work: it needs an uploaded input file.
 */
describe("the official openai package against Sluice", () => {
  const f = withSluice({
    models: (url) => [
      { id: MODEL, upstream_url: url },
      { id: SLOW, upstream_url: url, upstream_model: MODEL, batch_concurrency: 1 },
    ],
  })
  let openai: OpenAI
  let key: string

  beforeAll(async () => {
    const admin = f.api()
    expect((await admin.admin("POST", "/admin/v1/accounts", { id: "openai-sdk", tier: "internal" })).status).toBe(200)
    key = (await admin.admin("POST", "/admin/v1/accounts/openai-sdk/keys")).body.key
    openai = new OpenAI({ apiKey: key, baseURL: `${f.sluice.url}/v1`, maxRetries: 0 })
  })

  const create = async (rows: ReadonlyArray<ReturnType<typeof chatRow>>) => {
    const created = await f.api(key).call("POST", "/v1/batches", { requests: rows, metadata: { via: "http" } })
    expect(created.status).toBe(200)
    return created.body as { id: string }
  }

  it("batches.retrieve answers Sluice's batch with its id, status, request_counts and token usage", async () => {
    const { id } = await create([chatRow("a", "one"), chatRow("b", "two")])
    const done = await f.api(key).waitFinal(id)
    const batch = await openai.batches.retrieve(id)
    expect(batch).toMatchObject({
      id,
      object: "batch",
      endpoint: "/v1/chat/completions",
      status: "completed",
      request_counts: { total: 2, completed: 2, failed: 0 },
      metadata: { via: "http" },
      completed_at: done.completed_at,
    })
    // Typed by OpenAI's own BatchUsage: the same shape, details included.
    const usage: BatchUsage | undefined = batch.usage
    expect(usage).toEqual(done.usage)
    expect(usage?.total_tokens).toBe((usage?.input_tokens ?? 0) + (usage?.output_tokens ?? 0))
    expect(usage?.output_tokens).toBeGreaterThan(0)
    expect(usage?.input_tokens_details.cached_tokens).toBe(0)
    expect(usage?.output_tokens_details.reasoning_tokens).toBe(0)
  })

  it("batches.list auto-paginates over five batches, newest first, a page of two at a time", async () => {
    const admin = f.api()
    expect((await admin.admin("POST", "/admin/v1/accounts", { id: "openai-list", tier: "internal" })).status).toBe(200)
    const listKey = (await admin.admin("POST", "/admin/v1/accounts/openai-list/keys")).body.key as string
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) {
      const created = await f.api(listKey).call("POST", "/v1/batches", { requests: [chatRow(`l${i}`, `list ${i}`)] })
      expect(created.status).toBe(200)
      ids.push(created.body.id)
    }
    const lister = new OpenAI({ apiKey: listKey, baseURL: `${f.sluice.url}/v1`, maxRetries: 0 })

    const first = await lister.batches.list({ limit: 2 })
    expect(first.data.map((b) => b.id)).toEqual([ids[4], ids[3]])
    expect(first.has_more).toBe(true)

    const listed: Array<OpenAI.Batches.Batch> = []
    for await (const batch of lister.batches.list({ limit: 2 })) listed.push(batch)
    expect(listed.map((b) => b.id)).toEqual([...ids].reverse())
    for (const batch of listed) {
      expect(batch).toMatchObject({ object: "batch", endpoint: "/v1/chat/completions" })
      expect(batch.request_counts?.total).toBe(1)
      expect(["validating", "in_progress", "completed"]).toContain(batch.status)
    }
  })

  it("batches.cancel cancels a running batch and answers it cancelling or cancelled", async () => {
    const { id } = await create([1, 2, 3].map((i) => chatRow(`s${i}`, `slow ${i} ${simDirective.latency(1_500)}`, SLOW)))
    const cancelled = await openai.batches.cancel(id)
    expect(cancelled.id).toBe(id)
    expect(["cancelling", "cancelled"]).toContain(cancelled.status)
    expect(cancelled.request_counts?.total).toBe(3)
    const final = await f.api(key).waitFinal(id)
    expect(final.status).toBe("cancelled")
    expect((await openai.batches.retrieve(id)).status).toBe("cancelled")
  })

  it("a missing batch is the SDK's NotFoundError with Sluice's error code and type", async () => {
    const error = await openai.batches.retrieve("batch_missing").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.NotFoundError)
    expect(error).toMatchObject({ status: 404, code: "batch_not_found", type: "invalid_request_error", param: null })
    expect((error as Error).message).toContain("No batch found with id 'batch_missing'")
  })
})
