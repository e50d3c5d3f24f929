import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../src/sim/Directives.js"
import { SIM_EMBEDDING_DIMENSIONS, embeddingOf, parseEmbeddingsRequest } from "../src/sim/Embeddings.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"

const MODEL = "qwen3-embedding-0.6b"

// Answers are checked field by field, so untyped JSON is what the assertions want.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const embed = async (sim: Simulator, body: unknown): Promise<{ status: number; headers: Headers; body: Json }> => {
  const res = await fetch(`${sim.url}/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  })
  return { status: res.status, headers: res.headers, body: await res.json() }
}

const norm = (v: ArrayLike<number>) => Math.sqrt(Array.from(v).reduce((n, x) => n + x * x, 0))

const decodeBase64 = (text: string): Array<number> => {
  const bytes = Buffer.from(text, "base64")
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4))
}

describe("simulated model server: embeddings", () => {
  let sim: Simulator
  beforeAll(async () => {
    sim = await startSimulator({ models: ["glm-5.3-flash", MODEL], faults: { retryAfterSeconds: 3 } })
  })
  afterAll(() => sim.close())

  it("answers OpenAI's list of embeddings with the usage of its inputs", async () => {
    const answer = await embed(sim, { model: MODEL, input: ["The food was delicious.", "The waiter was rude."] })
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ object: "list", model: MODEL })
    expect(answer.body.data.map((d: Json) => [d.object, d.index, d.embedding.length])).toEqual([
      ["embedding", 0, SIM_EMBEDDING_DIMENSIONS],
      ["embedding", 1, SIM_EMBEDDING_DIMENSIONS],
    ])
    const tokens = Math.ceil("The food was delicious.".length / 4) + Math.ceil("The waiter was rude.".length / 4)
    expect(answer.body.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens })
    for (const d of answer.body.data) expect(norm(d.embedding)).toBeCloseTo(1, 5)
  })

  it("gives the same input the same vector, whatever it is sent with, and another input another", async () => {
    const alone = await embed(sim, { model: MODEL, input: "same text" })
    const among = await embed(sim, { model: MODEL, input: ["other text", "same text"] })
    expect(among.body.data[1].embedding).toEqual(alone.body.data[0].embedding)
    expect(among.body.data[0].embedding).not.toEqual(alone.body.data[0].embedding)
  })

  it("takes token ids and token-id arrays, counting their tokens", async () => {
    const one = await embed(sim, { model: MODEL, input: [101, 2023, 102] })
    expect(one.body.data).toHaveLength(1)
    expect(one.body.usage.prompt_tokens).toBe(3)
    const two = await embed(sim, { model: MODEL, input: [[101, 2023, 102], [7]] })
    expect(two.body.data).toHaveLength(2)
    expect(two.body.usage.prompt_tokens).toBe(4)
    expect(two.body.data[0].embedding).toEqual(one.body.data[0].embedding)
  })

  it("honours dimensions: the full vector's start, at unit length", async () => {
    const full = await embed(sim, { model: MODEL, input: "shorten me" })
    const short = await embed(sim, { model: MODEL, input: "shorten me", dimensions: 8 })
    expect(short.body.data[0].embedding).toHaveLength(8)
    expect(norm(short.body.data[0].embedding)).toBeCloseTo(1, 5)
    const head = full.body.data[0].embedding.slice(0, 8)
    const scale = norm(head)
    short.body.data[0].embedding.forEach((x: number, i: number) => expect(x).toBeCloseTo(head[i] / scale, 5))
  })

  it("honours encoding_format base64: the float32 values' little-endian bytes", async () => {
    const floats = await embed(sim, { model: MODEL, input: "encode me", dimensions: 16 })
    const packed = await embed(sim, { model: MODEL, input: "encode me", dimensions: 16, encoding_format: "base64" })
    expect(typeof packed.body.data[0].embedding).toBe("string")
    expect(decodeBase64(packed.body.data[0].embedding)).toEqual(floats.body.data[0].embedding)
  })

  it("refuses what OpenAI refuses with 400, and an unknown model with 404", async () => {
    for (const body of [
      { model: MODEL },
      { model: MODEL, input: "" },
      { model: MODEL, input: [] },
      { model: MODEL, input: ["a", 1] },
      { model: MODEL, input: Array.from({ length: 2049 }, () => "x") },
      { model: MODEL, input: "x", encoding_format: "int8" },
      { model: MODEL, input: "x", dimensions: 0 },
      { model: MODEL, input: "x", dimensions: SIM_EMBEDDING_DIMENSIONS + 1 },
      { input: "x" },
      "{not json",
    ]) {
      const answer = await embed(sim, body)
      expect(answer.status, JSON.stringify(body)).toBe(400)
      expect(answer.body.error.type).toBe("invalid_request_error")
    }
    const unknown = await embed(sim, { model: "no-such-model", input: "x" })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error.code).toBe("model_not_found")
  })

  it("obeys directives in its texts, as the chat endpoint does", async () => {
    const text = `embed me ${simDirective.fail(1, 503)}`
    expect((await embed(sim, { model: MODEL, input: text })).status).toBe(503)
    expect((await embed(sim, { model: MODEL, input: text })).status).toBe(200)
    const limited = await embed(sim, { model: MODEL, input: ["fine", `then ${simDirective.status(429)}`] })
    expect(limited.status).toBe(429)
    expect(limited.headers.get("retry-after")).toBe("3")
    expect((await embed(sim, { model: MODEL, input: `bad ${"[sim:explode]"}` })).status).toBe(400)
  })

  it("truncates an answer on [sim:truncate]", async () => {
    const res = await fetch(`${sim.url}/embeddings`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, input: `cut me ${simDirective.truncate}` }),
    })
    expect(res.status).toBe(200)
    await expect(res.json()).rejects.toThrow()
  })
})

describe("simulated embeddings: laws", () => {
  const input = fc.oneof(fc.string({ minLength: 1, maxLength: 60 }), fc.array(fc.nat({ max: 100_000 }), { minLength: 1, maxLength: 20 }))

  it("a vector is a function of its input alone, of unit length", () => {
    fc.assert(
      fc.property(input, fc.integer({ min: 1, max: SIM_EMBEDDING_DIMENSIONS }), (text, dimensions) => {
        const vector = embeddingOf(text, dimensions)
        expect(vector).toHaveLength(dimensions)
        expect(Array.from(embeddingOf(text, dimensions))).toEqual(Array.from(vector))
        expect(norm(vector)).toBeCloseTo(1, 4)
      }),
    )
  })

  it("a shortened vector is the full one's start scaled to unit length", () => {
    fc.assert(
      fc.property(input, fc.integer({ min: 1, max: SIM_EMBEDDING_DIMENSIONS }), (text, dimensions) => {
        const full = embeddingOf(text, SIM_EMBEDDING_DIMENSIONS)
        const short = embeddingOf(text, dimensions)
        // Cosine 1 between the short vector and the full one's start: the same direction.
        const head = Array.from(full.slice(0, dimensions))
        const dot = head.reduce((n, x, i) => n + x * short[i]!, 0)
        expect(dot / (norm(head) * norm(short))).toBeCloseTo(1, 4)
      }),
    )
  })

  it("every input shape is read as its list of inputs, in order", () => {
    const shaped = fc.oneof(
      fc.string({ minLength: 1, maxLength: 30 }).map((text) => ({ input: text as unknown, inputs: [text] as Array<unknown> })),
      fc.array(fc.string({ minLength: 1, maxLength: 30 }), { minLength: 1, maxLength: 8 }).map((texts) => ({ input: texts, inputs: texts })),
      fc.array(fc.nat({ max: 100_000 }), { minLength: 1, maxLength: 20 }).map((ids) => ({ input: ids, inputs: [ids] })),
      fc.array(fc.array(fc.nat({ max: 100_000 }), { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 8 }).map((arrays) => ({ input: arrays, inputs: arrays })),
    )
    fc.assert(
      fc.property(shaped, ({ input, inputs }) => {
        const request = parseEmbeddingsRequest(JSON.stringify({ model: MODEL, input }))
        if (typeof request === "string") throw new Error(request)
        expect(request.inputs).toEqual(inputs)
        expect(request.text).toBe(inputs.filter((i) => typeof i === "string").join("\n"))
      }),
    )
  })
})
