import OpenAI, { toFile } from "openai"
import { beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { withSluice } from "../support/withSluice.js"

const CHAT = "glm-5.3-flash"
const SLOW = "slow-model"
const EMBED = "embed-small"
const EMBED_UPSTREAM = "qwen3-embedding-0.6b"

/*
 * OpenAI's file-based batch flow, driven by the official `openai` package unmodified, on both logs:
 * files.create → batches.create({input_file_id, endpoint, completion_window}) → batches.retrieve until
 * final → files.content(output_file_id) and files.content(error_file_id), parsed line by line and each
 * checked against the input line it answers; for chat, embeddings and Responses rows. Then files.list,
 * files.delete, batches.list and batches.cancel on file-based batches.
 */

interface OutputLine {
  readonly id: string
  readonly custom_id: string
  readonly response: { readonly status_code: number; readonly request_id: string; readonly body: Record<string, unknown> } | null
  readonly error: { readonly code: string; readonly message: string } | null
}

const jsonl = (lines: ReadonlyArray<unknown>) => `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`
const parseLines = (text: string) =>
  text
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as OutputLine)

for (const log of ["embedded", "nats"] as const) {
  describe(`OpenAI's file-based batch flow with the official openai package (${log} log)`, () => {
    const f = withSluice({
      log,
      models: (url) => [
        { id: CHAT, upstream_url: url },
        { id: SLOW, upstream_url: url, upstream_model: CHAT, batch_concurrency: 1 },
        { id: EMBED, upstream_url: url, upstream_model: EMBED_UPSTREAM, endpoints: ["/v1/embeddings"] },
      ],
      simulator: { models: [CHAT, EMBED_UPSTREAM] },
    })
    let openai: OpenAI
    let key: string

    beforeAll(async () => {
      const admin = f.api()
      expect((await admin.admin("POST", "/admin/v1/accounts", { id: "files-sdk", tier: "internal" })).status).toBe(200)
      key = (await admin.admin("POST", "/admin/v1/accounts/files-sdk/keys")).body.key
      openai = new OpenAI({ apiKey: key, baseURL: `${f.sluice.url}/v1`, maxRetries: 0 })
    })

    const upload = async (name: string, lines: ReadonlyArray<unknown>) =>
      openai.files.create({ file: await toFile(Buffer.from(jsonl(lines)), name), purpose: "batch" })

    const runToFinal = async (id: string) => {
      for (;;) {
        const batch = await openai.batches.retrieve(id)
        if (["completed", "failed", "expired", "cancelled"].includes(batch.status)) return batch
        await new Promise((r) => setTimeout(r, 100))
      }
    }

    it("chat rows: every line answered once in the output file, a failed one in the error file", async () => {
      const input = [
        ...Array.from({ length: 12 }, (_, i) => ({
          custom_id: `chat-${i}`,
          method: "POST",
          url: "/v1/chat/completions",
          body: { model: CHAT, messages: [{ role: "user", content: `question ${i}` }], max_tokens: 20 },
        })),
        {
          custom_id: "chat-fails",
          method: "POST",
          url: "/v1/chat/completions",
          body: { model: CHAT, messages: [{ role: "user", content: `fail ${simDirective.status(400)}` }] },
        },
      ]
      const file = await upload("chat.jsonl", input)
      expect(file).toMatchObject({ object: "file", purpose: "batch", filename: "chat.jsonl", status: "processed" })
      expect(file.id).toMatch(/^file-/)
      expect(file.bytes).toBe(Buffer.byteLength(jsonl(input)))

      const created = await openai.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h", metadata: { run: "chat" } })
      expect(created).toMatchObject({ object: "batch", endpoint: "/v1/chat/completions", input_file_id: file.id, output_file_id: null, error_file_id: null })
      expect(created.request_counts?.total).toBe(input.length)

      const done = await runToFinal(created.id)
      expect(done.status).toBe("completed")
      expect(done.request_counts).toEqual({ total: 13, completed: 12, failed: 1 })
      expect(done.output_file_id).toMatch(/^file-/)
      expect(done.error_file_id).toMatch(/^file-/)

      const output = parseLines(await (await openai.files.content(done.output_file_id!)).text())
      expect(output.map((l) => l.custom_id)).toEqual(input.slice(0, 12).map((l) => l.custom_id))
      for (const [i, line] of output.entries()) {
        expect(line.id).toBe(`batch_req_${i + 1}`)
        expect(line.error).toBeNull()
        expect(line.response?.status_code).toBe(200)
        expect(line.response?.body["object"]).toBe("chat.completion")
        expect(line.response?.body["model"]).toBe(CHAT)
      }
      const errors = parseLines(await (await openai.files.content(done.error_file_id!)).text())
      expect(errors.map((l) => l.custom_id)).toEqual(["chat-fails"])
      expect(errors[0]!.id).toBe("batch_req_13")
      expect(errors[0]!.error?.code).toBeTruthy()

      // The views are files of the caller's: their objects say their size, and they are listed.
      const outputFile = await openai.files.retrieve(done.output_file_id!)
      const outputText = await (await openai.files.content(done.output_file_id!)).text()
      expect(outputFile).toMatchObject({ id: done.output_file_id, object: "file", purpose: "batch_output", bytes: Buffer.byteLength(outputText) })
      const listed: Array<string> = []
      for await (const f of openai.files.list()) listed.push(f.id)
      expect(listed).toEqual(expect.arrayContaining([file.id, done.output_file_id, done.error_file_id]))
      const batchOutputs: Array<string> = []
      for await (const f of openai.files.list({ purpose: "batch_output" })) batchOutputs.push(f.id)
      expect(batchOutputs).toEqual(expect.arrayContaining([done.output_file_id, done.error_file_id]))
      expect(batchOutputs).not.toContain(file.id)

      // The batch is listed with its files.
      const batches: Array<OpenAI.Batches.Batch> = []
      for await (const b of openai.batches.list({ limit: 5 })) batches.push(b)
      expect(batches.find((b) => b.id === created.id)).toMatchObject({ input_file_id: file.id, output_file_id: done.output_file_id })
    })

    it("embeddings rows: each output line holds its input's vectors", async () => {
      const texts = ["alpha", "beta gamma", "delta epsilon zeta"]
      const input = texts.map((text, i) => ({ custom_id: `emb-${i}`, method: "POST", url: "/v1/embeddings", body: { model: EMBED, input: text } }))
      const file = await upload("embed.jsonl", input)
      const created = await openai.batches.create({ input_file_id: file.id, endpoint: "/v1/embeddings", completion_window: "24h" })
      expect(created.endpoint).toBe("/v1/embeddings")
      const done = await runToFinal(created.id)
      expect(done).toMatchObject({ status: "completed", request_counts: { total: 3, completed: 3, failed: 0 }, error_file_id: null })
      const output = parseLines(await (await openai.files.content(done.output_file_id!)).text())
      expect(output.map((l) => l.custom_id)).toEqual(["emb-0", "emb-1", "emb-2"])
      const vectors = output.map((l) => {
        const body = l.response!.body as { object: string; data: Array<{ object: string; embedding: Array<number> }>; usage: { prompt_tokens: number } }
        expect(body.object).toBe("list")
        expect(body.data).toHaveLength(1)
        expect(body.data[0]!.object).toBe("embedding")
        expect(body.usage.prompt_tokens).toBeGreaterThan(0)
        return body.data[0]!.embedding
      })
      expect(vectors[0]!.length).toBeGreaterThan(0)
      expect(vectors[0]).not.toEqual(vectors[1])
      expect(done.usage?.input_tokens).toBeGreaterThan(0)
    })

    it("Responses rows: each output line's body is a Response object", async () => {
      const input = [0, 1].map((i) => ({ custom_id: `resp-${i}`, method: "POST", url: "/v1/responses", body: { model: CHAT, input: `say ${i}`, max_output_tokens: 16 } }))
      const file = await upload("responses.jsonl", input)
      const created = await openai.batches.create({ input_file_id: file.id, endpoint: "/v1/responses", completion_window: "24h" })
      const done = await runToFinal(created.id)
      expect(done.status).toBe("completed")
      const output = parseLines(await (await openai.files.content(done.output_file_id!)).text())
      expect(output.map((l) => l.custom_id)).toEqual(["resp-0", "resp-1"])
      for (const line of output) {
        expect(line.response?.body).toMatchObject({ object: "response", model: CHAT })
        expect(Array.isArray(line.response?.body["output"])).toBe(true)
      }
    })

    it("a bad line refuses the whole batch naming the line and its custom_id, and stores nothing", async () => {
      const file = await upload("bad.jsonl", [
        { custom_id: "ok", method: "POST", url: "/v1/chat/completions", body: { model: CHAT, messages: [{ role: "user", content: "hi" }] } },
        { custom_id: "bad", method: "POST", url: "/v1/chat/completions", body: { model: "no-such-model", messages: [{ role: "user", content: "hi" }] } },
      ])
      const before = (await openai.batches.list({ limit: 100 })).data.length
      const error = await openai.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OpenAI.BadRequestError)
      expect((error as Error).message).toContain("line 2 (custom_id 'bad')")
      expect((await openai.batches.list({ limit: 100 })).data.length).toBe(before)
      const wrongEndpoint = await openai.batches.create({ input_file_id: file.id, endpoint: "/v1/embeddings", completion_window: "24h" }).catch((e: unknown) => e)
      expect(wrongEndpoint).toBeInstanceOf(OpenAI.BadRequestError)
      expect((wrongEndpoint as Error).message).toContain("line 1 (custom_id 'ok')")
      const missing = await openai.batches.create({ input_file_id: "file-nope", endpoint: "/v1/chat/completions", completion_window: "24h" }).catch((e: unknown) => e)
      expect(missing).toBeInstanceOf(OpenAI.NotFoundError)
    })

    it("batches.cancel on a file-based batch: the cancelled rows are in its error file", async () => {
      const input = [1, 2, 3, 4].map((i) => ({
        custom_id: `slow-${i}`,
        method: "POST",
        url: "/v1/chat/completions",
        body: { model: SLOW, messages: [{ role: "user", content: `slow ${i} ${simDirective.latency(1_500)}` }] },
      }))
      const file = await upload("slow.jsonl", input)
      const created = await openai.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" })
      const cancelling = await openai.batches.cancel(created.id)
      expect(["cancelling", "cancelled"]).toContain(cancelling.status)
      const done = await runToFinal(created.id)
      expect(done.status).toBe("cancelled")
      const completed = done.request_counts!.completed
      const errors = parseLines(await (await openai.files.content(done.error_file_id!)).text())
      expect(errors.length).toBe(4 - completed)
      expect(new Set(errors.map((l) => l.custom_id)).size).toBe(errors.length)
      if (completed > 0) expect(parseLines(await (await openai.files.content(done.output_file_id!)).text())).toHaveLength(completed)
      else expect(done.output_file_id).toBeNull()
    })

    it("an Idempotency-Key makes a retried create from a file answer the same batch", async () => {
      const file = await upload("again.jsonl", [
        { custom_id: "k", method: "POST", url: "/v1/chat/completions", body: { model: CHAT, messages: [{ role: "user", content: "k" }] } },
      ])
      const create = (endpoint: string) =>
        fetch(`${f.sluice.url}/v1/batches`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "idempotency-key": `file-${file.id}` },
          body: JSON.stringify({ input_file_id: file.id, endpoint, completion_window: "24h" }),
        })
      const first = await create("/v1/chat/completions")
      const second = await create("/v1/chat/completions")
      expect(first.status).toBe(200)
      expect(second.status).toBe(200)
      const [a, b] = [(await first.json()) as { id: string }, (await second.json()) as { id: string }]
      expect(b.id).toBe(a.id)
      expect((await create("/v1/embeddings")).status).toBe(422)
      expect((await runToFinal(a.id)).request_counts?.total).toBe(1)
    })

    it("an estimate of a create from a file answers what the same rows inline would", async () => {
      const input = [0, 1, 2].map((i) => ({
        custom_id: `est-${i}`,
        method: "POST",
        url: "/v1/chat/completions",
        body: { model: CHAT, messages: [{ role: "user", content: `estimate me ${i} ${"word ".repeat(i * 10)}` }], max_tokens: 30 },
      }))
      const file = await upload("estimate.jsonl", input)
      const estimate = async (body: unknown) => {
        const answer = await f.api(key).call("POST", "/v1/batches/estimate", body)
        expect(answer.status, answer.text).toBe(200)
        return answer.body as { request_counts: { total: number }; models: Array<{ model: string; requests: number; prompt_tokens: number; max_completion_tokens: number }> }
      }
      const fromFile = await estimate({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" })
      const inline = await estimate({ requests: input })
      expect(fromFile.request_counts).toEqual({ total: 3 })
      expect(fromFile.models.map(({ model, requests, prompt_tokens, max_completion_tokens }) => ({ model, requests, prompt_tokens, max_completion_tokens }))).toEqual(
        inline.models.map(({ model, requests, prompt_tokens, max_completion_tokens }) => ({ model, requests, prompt_tokens, max_completion_tokens })),
      )
      const missing = await f.api(key).call("POST", "/v1/batches/estimate", { input_file_id: "file-nope", endpoint: "/v1/chat/completions" })
      expect(missing.status).toBe(404)
      const noEndpoint = await f.api(key).call("POST", "/v1/batches/estimate", { input_file_id: file.id })
      expect(noEndpoint.status).toBe(400)
      expect(noEndpoint.body.error.param).toBe("endpoint")
    })

    it("files.delete removes an uploaded file; a batch already made from it keeps its rows", async () => {
      const input = [{ custom_id: "x", method: "POST", url: "/v1/chat/completions", body: { model: CHAT, messages: [{ role: "user", content: "x" }] } }]
      const file = await upload("gone.jsonl", input)
      const created = await openai.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" })
      expect(await openai.files.delete(file.id)).toEqual({ id: file.id, object: "file", deleted: true })
      expect(await openai.files.retrieve(file.id).catch((e: unknown) => e)).toBeInstanceOf(OpenAI.NotFoundError)
      const done = await runToFinal(created.id)
      expect(done).toMatchObject({ status: "completed", input_file_id: file.id })
      expect(parseLines(await (await openai.files.content(done.output_file_id!)).text()).map((l) => l.custom_id)).toEqual(["x"])
      const again = await openai.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" }).catch((e: unknown) => e)
      expect(again).toBeInstanceOf(OpenAI.NotFoundError)
    })
  })
}
