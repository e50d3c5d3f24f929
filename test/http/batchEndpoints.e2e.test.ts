import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { SIM_EMBEDDING_DIMENSIONS, embeddingOf } from "../../src/sim/Embeddings.js"
import { chatRow, client } from "../support/client.js"
import { withSluice } from "../support/withSluice.js"

const CHAT = "glm-5.3-flash"
const EMBED = "qwen3-embedding-0.6b"
/** The upstream knows the embeddings model by another name: the forwarded body is renamed, as a chat row's is. */
const EMBED_UPSTREAM = "sim-embedder"
const EMBED_USD_PER_MTOK = 100
const CHAT_INPUT_USD_PER_MTOK = 10
const CHAT_OUTPUT_USD_PER_MTOK = 20

const simTokens = (text: string) => Math.max(1, Math.ceil(text.length / 4))
const decodeBase64 = (text: string) => {
  const bytes = Buffer.from(text, "base64")
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4))
}
const final = ["completed", "failed", "expired", "cancelled"]

/*
 * Batches whose rows call /v1/embeddings and /v1/responses, inline, against the real simulator over
 * loopback, on both logs; the actors run on a TestClock, moved only to bring a retried row back.
 */
describe.each(["embedded", "nats"] as const)("a batch's endpoint, end to end (%s log)", (log) => {
  const f = withSluice({
    log,
    inProcess: true,
    simulator: { models: [CHAT, EMBED_UPSTREAM], latencyMs: 2 },
    models: (url) => [
      { id: CHAT, upstream_url: url, batch_concurrency: 4, input_usd_per_mtok: CHAT_INPUT_USD_PER_MTOK, output_usd_per_mtok: CHAT_OUTPUT_USD_PER_MTOK },
      { id: EMBED, upstream_url: url, upstream_model: EMBED_UPSTREAM, batch_concurrency: 4, input_usd_per_mtok: EMBED_USD_PER_MTOK, endpoints: ["/v1/embeddings"] },
    ],
  })
  const api = () => f.api()

  /** Polls until the batch is final, moving the clock past any backoff while nothing is on its way upstream. */
  const runToEnd = async (batchId: string) => {
    for (let step = 0; step < 600; step++) {
      const batch = await api().call("GET", `/v1/batches/${batchId}`)
      if (final.includes(batch.body.status)) return batch.body
      if (f.sim.stats().inFlight === 0) await f.sluice.adjust(5_000)
      await new Promise((r) => setTimeout(r, 10))
    }
    throw new Error(`batch ${batchId} did not finish`)
  }

  it("an embeddings batch runs against the upstream's /embeddings: vectors in its results, retried as chat rows are, cost from prompt tokens", async () => {
    const texts = ["The food was delicious.", `Retried once ${simDirective.fail(1, 503)}`]
    const requests = [
      { custom_id: "one", method: "POST", url: "/v1/embeddings", body: { model: EMBED, input: texts[0] } },
      { custom_id: "retried", url: "/v1/embeddings", body: { model: EMBED, input: texts[1] } },
      { custom_id: "short", body: { model: EMBED, input: ["alpha", "beta gamma"], dimensions: 8 } },
      { custom_id: "packed", url: "/v1/embeddings", body: { model: EMBED, input: [[101, 7592, 102], [5]], encoding_format: "base64", user: "u-1" } },
    ]
    const estimate = await api().call("POST", "/v1/batches/estimate", { requests: requests.slice(0, 2) })
    expect(estimate.status).toBe(200)
    const estimatedTokens = simTokens(texts[0]!) + simTokens(texts[1]!)
    expect(estimate.body.models).toEqual([
      expect.objectContaining({ model: EMBED, requests: 2, prompt_tokens: estimatedTokens, max_completion_tokens: 0, tokens: "upstream" }),
    ])
    expect(estimate.body.cost_usd_max).toBeCloseTo((estimatedTokens * EMBED_USD_PER_MTOK) / 1e6, 9)

    const created = await api().call("POST", "/v1/batches", { requests, metadata: { corpus: "reviews" } })
    expect(created.status).toBe(200)
    expect(created.body.endpoint).toBe("/v1/embeddings")
    const batch = await runToEnd(created.body.id)
    expect(batch.status).toBe("completed")
    expect(batch.request_counts).toEqual({ total: 4, completed: 4, failed: 0 })
    // The retried row's first attempt was answered 503, and it ran again.
    expect(f.sim.stats().answered[503]).toBe(1)

    const results = await api().allResults(created.body.id)
    expect(results.map((r) => [r.custom_id, r.status, r.response.status_code])).toEqual([
      ["one", "completed", 200],
      ["retried", "completed", 200],
      ["short", "completed", 200],
      ["packed", "completed", 200],
    ])
    const body = (i: number) => results[i].response.body
    for (let i = 0; i < 4; i++) expect(body(i)).toMatchObject({ object: "list", model: EMBED_UPSTREAM })
    expect(body(0).data).toEqual([{ object: "embedding", index: 0, embedding: Array.from(embeddingOf(texts[0]!, SIM_EMBEDDING_DIMENSIONS)) }])
    expect(body(1).data[0].embedding).toEqual(Array.from(embeddingOf(texts[1]!, SIM_EMBEDDING_DIMENSIONS)))
    expect(body(2).data.map((d: { embedding: Array<number> }) => d.embedding)).toEqual([Array.from(embeddingOf("alpha", 8)), Array.from(embeddingOf("beta gamma", 8))])
    expect(body(3).data.map((d: { embedding: string }) => decodeBase64(d.embedding))).toEqual([
      Array.from(embeddingOf([101, 7592, 102], SIM_EMBEDDING_DIMENSIONS)),
      Array.from(embeddingOf([5], SIM_EMBEDDING_DIMENSIONS)),
    ])

    const prompt = [simTokens(texts[0]!), simTokens(texts[1]!), simTokens("alpha") + simTokens("beta gamma"), 4]
    prompt.forEach((n, i) => expect(body(i).usage).toEqual({ prompt_tokens: n, total_tokens: n }))
    const tokens = prompt.reduce((a, b) => a + b, 0)
    expect(batch.usage).toEqual({
      input_tokens: tokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: tokens,
    })
    expect(batch.cost_usd).toBeCloseTo((tokens * EMBED_USD_PER_MTOK) / 1e6, 9)

    // The JSONL download and a single result line carry the same embeddings bodies.
    const jsonl = await api().call("GET", `/v1/batches/${created.body.id}/results.jsonl`)
    const lines = jsonl.text.trim().split("\n").map((l) => JSON.parse(l))
    expect(lines.map((l) => l.response.body)).toEqual(results.map((r) => r.response.body))
    const one = await api().call("GET", `/v1/batches/${created.body.id}/results/${results[3].id}`)
    expect(one.body.request).toEqual({ custom_id: "packed", method: "POST", url: "/v1/embeddings", body: requests[3]!.body })
  })

  it("a Responses batch answers Response objects, with tokens and cost from the upstream's completion", async () => {
    const requests = [
      { custom_id: "plain", method: "POST", url: "/v1/responses", body: { model: CHAT, input: "Name a prime number." } },
      {
        custom_id: "instructed",
        url: "/v1/responses",
        body: { model: CHAT, instructions: "Answer in one word.", input: [{ role: "user", content: [{ type: "input_text", text: "Pick a colour." }] }], temperature: 0.2, metadata: { k: "v" } },
      },
      { custom_id: "capped", url: "/v1/responses", body: { model: CHAT, input: `Write at length ${simDirective.tokens(50)}`, max_output_tokens: 3 } },
      { custom_id: "refused", url: "/v1/responses", body: { model: CHAT, input: `No ${simDirective.status(400)}` } },
    ]
    const created = await api().call("POST", "/v1/batches", { requests })
    expect(created.status).toBe(200)
    expect(created.body.endpoint).toBe("/v1/responses")
    const batch = await runToEnd(created.body.id)
    expect(batch.request_counts).toEqual({ total: 4, completed: 3, failed: 1 })

    const results = await api().allResults(created.body.id)
    const body = (i: number) => results[i].response.body
    for (let i = 0; i < 3; i++) {
      expect(body(i)).toMatchObject({ object: "response", model: CHAT, service_tier: "default", background: false, error: null })
      expect(body(i).id).toMatch(/^resp_[0-9a-f]{32}$/)
      expect(body(i).id).toBe(`resp_${results[i].response.request_id.slice("req_".length)}`)
      expect(body(i).created_at).toBe(batch.created_at)
    }
    expect(body(0).status).toBe("completed")
    expect(body(0).output).toEqual([
      {
        type: "message",
        id: body(0).id.replace("resp_", "msg_"),
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "Simulated answer to: Name a prime number.", annotations: [] }],
      },
    ])
    expect(body(1)).toMatchObject({ status: "completed", instructions: "Answer in one word.", temperature: 0.2, metadata: { k: "v" } })
    expect(body(1).output[0].content[0].text).toBe("Simulated answer to: Pick a colour.")
    expect(body(2)).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, max_output_tokens: 3 })
    expect(body(2).usage.output_tokens).toBe(3)
    expect(results[3]).toMatchObject({ status: "failed", response: null, error: { code: "invalid_request" } })

    // The batch's tokens are the Response objects' own, and its cost the upstream's usage at the model's prices.
    const input = [0, 1, 2].reduce((n, i) => n + body(i).usage.input_tokens, 0)
    const output = [0, 1, 2].reduce((n, i) => n + body(i).usage.output_tokens, 0)
    expect(body(0).usage.input_tokens).toBe(simTokens("Name a prime number."))
    expect(batch.usage).toMatchObject({ input_tokens: input, output_tokens: output, total_tokens: input + output })
    expect(batch.cost_usd).toBeCloseTo((input * CHAT_INPUT_USD_PER_MTOK + output * CHAT_OUTPUT_USD_PER_MTOK) / 1e6, 9)

    // The JSONL download, a result line (with the request as sent) and the completion-events feed answer the same objects.
    const jsonl = await api().call("GET", `/v1/batches/${created.body.id}/results.jsonl`)
    expect(jsonl.text.trim().split("\n").map((l) => JSON.parse(l).response?.body ?? null)).toEqual(results.map((r) => r.response?.body ?? null))
    const one = await api().call("GET", `/v1/batches/${created.body.id}/results/${results[1].id}`)
    expect(one.body.request).toEqual({ custom_id: "instructed", method: "POST", url: "/v1/responses", body: requests[1]!.body })
    expect(one.body.response.body).toEqual(body(1))
    const feed = await api().call("GET", "/v1/responses/events?limit=100")
    const events = feed.body.data.filter((e: { batch_id: string | null }) => e.batch_id === created.body.id)
    expect(events.find((e: { custom_id: string }) => e.custom_id === "plain")).toMatchObject({
      status: "completed",
      result: body(0),
      prompt_tokens: body(0).usage.input_tokens,
      completion_tokens: body(0).usage.output_tokens,
    })

    // A rerun of its failed row is a Responses batch too, its row checked again as one.
    const rerun = await api().call("POST", `/v1/batches/${created.body.id}/rerun`, {})
    expect(rerun.status).toBe(200)
    expect(rerun.body.endpoint).toBe("/v1/responses")
    expect(rerun.body.request_counts.total).toBe(1)
    await runToEnd(rerun.body.id)
  })

  it("refuses, naming the row, a batch mixing endpoints and a model that does not serve the batch's; nothing is stored", async () => {
    const before = await api().call("GET", "/v1/batches?limit=100")
    const mixed = await api().call("POST", "/v1/batches", {
      requests: [
        { custom_id: "e-1", url: "/v1/embeddings", body: { model: EMBED, input: "x" } },
        { custom_id: "e-2", body: { model: EMBED, input: "y" } },
        chatRow("c-1", "hello"),
      ],
    })
    expect(mixed.status).toBe(400)
    expect(mixed.body.error).toEqual({
      message: "requests[2] (custom_id 'c-1'): 'url' is '/v1/chat/completions' but this batch calls '/v1/embeddings': every request of a batch calls the same endpoint",
      type: "invalid_request_error",
      param: "requests[2].url",
      code: null,
    })

    const chatModel = await api().call("POST", "/v1/batches", {
      requests: [
        { custom_id: "e-1", url: "/v1/embeddings", body: { model: EMBED, input: "x" } },
        { custom_id: "e-2", url: "/v1/embeddings", body: { model: CHAT, input: "y" } },
      ],
    })
    expect(chatModel.status).toBe(400)
    expect(chatModel.body.error.message).toBe(
      "requests[1] (custom_id 'e-2'): Model 'glm-5.3-flash' does not serve /v1/embeddings, the endpoint of this batch; it serves /v1/chat/completions, /v1/responses",
    )
    expect(chatModel.body.error.param).toBe("requests[1].body.model")

    const deep = await api().call("POST", "/v1/batches", { requests: [{ custom_id: "e-1", url: "/v1/embeddings", body: { model: EMBED, input: ["ok", ""] } }] })
    expect(deep.status).toBe(400)
    expect(deep.body.error.message).toBe("requests[0] (custom_id 'e-1'): body.input[1] must be a non-empty string, as input[0] is, got \"\"")
    expect(deep.body.error.param).toBe("requests[0].body.input[1]")

    expect((await api().call("GET", "/v1/batches?limit=100")).body).toEqual(before.body)

    // A request of its own to an embeddings-only model is refused as well.
    const chat = await api().call("POST", "/v1/chat/completions", { model: EMBED, messages: [{ role: "user", content: "hi" }] })
    expect(chat.status).toBe(400)
    expect(chat.body.error).toMatchObject({ message: "Model 'qwen3-embedding-0.6b' does not serve /v1/chat/completions; it serves /v1/embeddings", param: "model" })
    const response = await api().call("POST", "/v1/responses", { model: EMBED, input: "hi" })
    expect(response.status).toBe(400)
    expect(response.body.error).toMatchObject({ message: "Model 'qwen3-embedding-0.6b' does not serve /v1/responses; it serves /v1/embeddings", param: "model" })
  })

  it("a chat batch beside them answers as before, and the models list says what each model serves", async () => {
    const created = await api().call("POST", "/v1/batches", { requests: [chatRow("q-1", "Hello there")] })
    expect(created.status).toBe(200)
    expect(created.body.endpoint).toBe("/v1/chat/completions")
    const batch = await runToEnd(created.body.id)
    expect(batch.status).toBe("completed")
    const [row] = await api().allResults(created.body.id)
    expect(row.response.body).toMatchObject({ object: "chat.completion", model: CHAT })
    expect(row.response.body.choices[0].message.content).toBe("Simulated answer to: Hello there")

    const models = await client(f.sluice.url).call("GET", "/v1/models")
    expect(models.body.data.map((m: { id: string; endpoints: Array<string> }) => [m.id, m.endpoints])).toEqual([
      [CHAT, ["/v1/chat/completions", "/v1/responses"]],
      [EMBED, ["/v1/embeddings"]],
    ])
  })
})

describe.each(["embedded", "nats"] as const)("a batch's endpoint across a restart (%s log)", (log) => {
  const f = withSluice({
    log,
    inProcess: true,
    lifetime: "test",
    simulator: { models: [CHAT, EMBED_UPSTREAM], latencyMs: 2 },
    models: (url) => [
      { id: CHAT, upstream_url: url, batch_concurrency: 4 },
      { id: EMBED, upstream_url: url, upstream_model: EMBED_UPSTREAM, batch_concurrency: 4, endpoints: ["/v1/embeddings"] },
    ],
  })
  const api = () => f.api()

  it("an instance started on the log runs the rows another left waiting, each on its batch's endpoint", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "sluice-endpoints-"))
    try {
      // The first instance's upstream does not answer: every row's first attempt fails and waits for its retry.
      const nowhere = "http://127.0.0.1:9/v1"
      await f.start({
        dataDir,
        keepData: true,
        models: [
          { id: CHAT, upstream_url: nowhere },
          { id: EMBED, upstream_url: nowhere, upstream_model: EMBED_UPSTREAM, endpoints: ["/v1/embeddings"] },
        ],
      })
      const embeddings = await api().call("POST", "/v1/batches", {
        requests: [
          { custom_id: "e-1", url: "/v1/embeddings", body: { model: EMBED, input: "first text" } },
          { custom_id: "e-2", body: { model: EMBED, input: ["second", "third"], dimensions: 4 } },
        ],
      })
      const responses = await api().call("POST", "/v1/batches", { requests: [{ custom_id: "r-1", url: "/v1/responses", body: { model: CHAT, input: "After a restart" } }] })
      expect([embeddings.status, responses.status]).toEqual([200, 200])
      for (const id of [embeddings.body.id, responses.body.id]) {
        for (let i = 0; ; i++) {
          const rows = await api().allResults(id)
          if (rows.every((r) => r.status === "queued" && r.error !== null)) break
          if (i > 1000) throw new Error(`the rows of ${id} were not tried: ${JSON.stringify(rows)}`)
          await new Promise((r) => setTimeout(r, 10))
        }
      }
      const stoppedAt = await f.sluice.now()
      await f.stop()

      await f.start({ dataDir, keepData: true, startAt: stoppedAt })
      for (const id of [embeddings.body.id, responses.body.id]) {
        for (let step = 0; ; step++) {
          const batch = await api().call("GET", `/v1/batches/${id}`)
          if (final.includes(batch.body.status)) break
          if (step > 600) throw new Error(`batch ${id} did not finish: ${batch.text}`)
          if (f.sim.stats().inFlight === 0) await f.sluice.adjust(5_000)
          await new Promise((r) => setTimeout(r, 10))
        }
      }
      const [e1, e2] = await api().allResults(embeddings.body.id)
      expect(e1.response.body.data[0].embedding).toEqual(Array.from(embeddingOf("first text", SIM_EMBEDDING_DIMENSIONS)))
      expect(e2.response.body.data.map((d: { embedding: Array<number> }) => d.embedding)).toEqual([Array.from(embeddingOf("second", 4)), Array.from(embeddingOf("third", 4))])
      const [r1] = await api().allResults(responses.body.id)
      expect(r1.response.body).toMatchObject({ object: "response", status: "completed", model: CHAT })
      expect(r1.response.body.output[0].content[0].text).toBe("Simulated answer to: After a restart")
    } finally {
      await f.stop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
