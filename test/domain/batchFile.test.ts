import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  type BatchFileLineError,
  type BatchFileOptions,
  type BatchFileRow,
  parseBatchFile,
  parseBatchRecords,
} from "../../src/domain/jsonl/batchFileLines.js"
import { createBodyBytes, defaultEnvelopeBytes, splitBatches } from "../../src/domain/jsonl/splitBatches.js"

const MODEL = "glm-5.3-flash"
const chat = (content: string, extra: object = {}) => ({ model: MODEL, messages: [{ role: "user", content }], ...extra })
const jsonl = (...lines: ReadonlyArray<unknown>) => lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n")

const rows = (text: string, options: BatchFileOptions = {}): ReadonlyArray<BatchFileRow> => {
  const parsed = parseBatchFile(text, options)
  if (Either.isLeft(parsed)) throw new Error(`expected rows, got ${parsed.left.message}`)
  return parsed.right
}

const lineError = (text: string, options: BatchFileOptions = {}): BatchFileLineError => {
  const parsed = parseBatchFile(text, options)
  if (Either.isRight(parsed)) throw new Error(`expected a line error, got ${JSON.stringify(parsed.right)}`)
  expect(parsed.left._tag).toBe("BatchFileLineError")
  expect(parsed.left.message.startsWith(`line ${parsed.left.line}: `)).toBe(true)
  return parsed.left
}

describe("parseBatchFile: the three line forms", () => {
  it("an OpenAI batch line keeps its custom_id and body and drops method and url", () => {
    const body = chat("hi", { max_tokens: 5 })
    expect(rows(jsonl({ custom_id: "a", method: "POST", url: "/v1/chat/completions", body }))).toEqual([{ custom_id: "a", body }])
  })

  it("an OpenAI batch line for /v1/responses passes its Responses-shaped body through unchanged", () => {
    const body = { model: MODEL, input: [{ role: "user", content: "hi" }], instructions: "Be brief.", max_output_tokens: 9 }
    expect(rows(jsonl({ custom_id: "r", method: "POST", url: "/v1/responses", body }))).toEqual([{ custom_id: "r", body }])
    // An embeddings line keeps its url: the batch its row goes into calls /v1/embeddings.
    const input = { model: "e", input: "text" }
    expect(rows(jsonl({ custom_id: "e", method: "POST", url: "/v1/embeddings", body: input }))).toEqual([{ custom_id: "e", body: input, url: "/v1/embeddings" }])
  })

  it("a bare line is its custom_id and body", () => {
    expect(rows(jsonl({ custom_id: "b", body: chat("x") }))).toEqual([{ custom_id: "b", body: chat("x") }])
  })

  it("a content-only line becomes one user message to the given model", () => {
    expect(rows(jsonl({ content: "Classify this." }, { custom_id: "c", content: "Two" }), { model: MODEL })).toEqual([
      { custom_id: "line-1", body: { model: MODEL, messages: [{ role: "user", content: "Classify this." }] } },
      { custom_id: "c", body: { model: MODEL, messages: [{ role: "user", content: "Two" }] } },
    ])
  })

  it("blank and whitespace-only lines are skipped but counted, CRLF endings and a BOM are read", () => {
    const text = `\uFEFF\n   \n${JSON.stringify({ body: chat("a") })}\r\n\t\r\n${JSON.stringify({ body: chat("b") })}\r\n`
    expect(rows(text).map((r) => r.custom_id)).toEqual(["line-3", "line-5"])
  })

  it("the given model fills a body without one and keeps a body naming it", () => {
    const { model: _, ...noModel } = chat("a")
    expect(rows(jsonl({ custom_id: "a", body: noModel }, { custom_id: "b", body: chat("b") }), { model: MODEL })).toEqual([
      { custom_id: "a", body: { ...noModel, model: MODEL } },
      { custom_id: "b", body: chat("b") },
    ])
  })

  it("an empty file has no rows", () => {
    expect(rows("")).toEqual([])
    expect(rows("\n \n")).toEqual([])
  })
})

describe("parseBatchFile: each line error names its line", () => {
  it.each([
    ["not JSON", jsonl({ body: chat("a") }, "", "{not json"), 3, /not valid JSON/],
    ["an array", jsonl([1, 2]), 1, /not a JSON object/],
    ["a number", jsonl(42), 1, /not a JSON object/],
    ["null", jsonl(null), 1, /not a JSON object/],
    ["a body that is not an object", jsonl({ custom_id: "a", body: "hi" }), 1, /"body" must be a JSON object/],
    ["a body that is an array", jsonl({ custom_id: "a", body: [] }), 1, /"body" must be a JSON object/],
    ["a method other than POST", jsonl({ method: "GET", url: "/v1/chat/completions", body: chat("a") }), 1, /"method" must be "POST", got "GET"/],
    ["an unknown url", jsonl({ method: "POST", url: "/v1/completions", body: chat("a") }), 1, /"url" must be one of .*"\/v1\/embeddings".*got "\/v1\/completions"/],
    ["no body and no content", jsonl({ custom_id: "a" }), 1, /no "body"/],
    ["an envelope without a body", jsonl({ custom_id: "a", method: "POST", url: "/v1/chat/completions" }), 1, /no "body"/],
    ["an unknown field", jsonl({ custom_id: "a", body: chat("a"), prompt: "x" }), 1, /unexpected field "prompt"/],
    ["content with a body", jsonl({ content: "a", body: chat("a") }), 1, /content-only line .* not "body"/],
    ["content that is not a string", jsonl({ content: 3 }), 1, /"content" must be a string/],
    ["an empty custom_id", jsonl({ custom_id: "", body: chat("a") }), 1, /"custom_id" must be a non-empty string/],
    ["a numeric custom_id", jsonl({ custom_id: 7, body: chat("a") }), 1, /"custom_id" must be a non-empty string/],
    ["a custom_id over 512 characters", jsonl({ custom_id: "x".repeat(513), body: chat("a") }), 1, /longer than 512/],
    ["a body without a model and no model given", jsonl({ body: { messages: [] } }), 1, /no "model".*--model/],
    ["a model that is not a string", jsonl({ body: { model: 5, messages: [] } }), 1, /"body.model" must be a string/],
  ])("%s", (_name, text, line, message) => {
    const error = lineError(text, { ...(text.includes("content") ? { model: MODEL } : {}) })
    expect(error.line).toBe(line)
    expect(error.message).toMatch(message)
  })

  it("a content-only line without a model asks for --model or model", () => {
    const error = lineError(jsonl({ body: chat("a") }, { content: "hi" }))
    expect(error.line).toBe(2)
    expect(error.message).toBe("line 2: a content-only line needs a model: pass --model (CLI) or model (SDK)")
  })

  it("a body naming another model than the given one", () => {
    const error = lineError(jsonl({ body: chat("a") }, { body: { ...chat("b"), model: "qwen3.6-35b" } }), { model: MODEL })
    expect(error.line).toBe(2)
    expect(error.message).toContain('"qwen3.6-35b"')
    expect(error.message).toContain(`"${MODEL}"`)
  })

  it("rows may name different models, as the API allows", () => {
    const rows = Either.getOrThrow(parseBatchFile(jsonl({ body: chat("a") }, { body: { ...chat("b"), model: "qwen3.6-35b" } }), {}))
    expect(rows.map((r) => r.body["model"])).toEqual([MODEL, "qwen3.6-35b"])
  })

  it("a repeated custom_id names the earlier line", () => {
    const error = lineError(jsonl({ custom_id: "a", body: chat("1") }, { custom_id: "b", body: chat("2") }, { custom_id: "a", body: chat("3") }))
    expect(error.line).toBe(3)
    expect(error.message).toBe('line 3: custom_id "a" repeats the one of line 1')
  })

  it("a given custom_id repeating an assigned one names the line it was assigned to", () => {
    const error = lineError(jsonl({ body: chat("1") }, { custom_id: "line-1", body: chat("2") }))
    expect(error).toMatchObject({ line: 2, message: 'line 2: custom_id "line-1" repeats the one of line 1' })
  })
})

type Form = "envelope" | "responses" | "bare" | "content"
interface Spec {
  readonly form: Form
  readonly customId: string | undefined
  readonly text: string
  readonly namesModel: boolean
  readonly blanksBefore: number
}

const spec = (ids: fc.Arbitrary<string | undefined>): fc.Arbitrary<Spec> =>
  fc.record({
    form: fc.constantFrom<Form>("envelope", "responses", "bare", "content"),
    customId: ids,
    text: fc.string({ maxLength: 30, unit: "binary" }),
    namesModel: fc.boolean(),
    blanksBefore: fc.nat(2),
  })

const specs = fc
  .uniqueArray(fc.option(fc.string({ minLength: 1, maxLength: 12 }).map((s) => `id:${s}`), { nil: undefined }), {
    maxLength: 30,
    comparator: (a, b) => a !== undefined && a === b,
  })
  .chain((ids) => fc.tuple(...ids.map((id) => spec(fc.constant(id)))))

const lineOf = (s: Spec): { line: unknown; body: Record<string, unknown> } => {
  const id = s.customId === undefined ? {} : { custom_id: s.customId }
  const model = s.namesModel ? { model: MODEL } : {}
  switch (s.form) {
    case "content":
      return { line: { ...id, content: s.text }, body: { model: MODEL, messages: [{ role: "user", content: s.text }] } }
    case "responses": {
      const body = { ...model, input: s.text, max_output_tokens: 7 }
      return { line: { ...id, method: "POST", url: "/v1/responses", body }, body: { model: MODEL, ...body } }
    }
    case "envelope": {
      const body = { ...model, messages: [{ role: "user", content: s.text }] }
      return { line: { ...id, method: "POST", url: "/v1/chat/completions", body }, body: { model: MODEL, ...body } }
    }
    case "bare": {
      const body = { ...model, messages: [{ role: "user", content: s.text }], temperature: 0.5 }
      return { line: { ...id, body }, body: { model: MODEL, ...body } }
    }
  }
}

const fileOf = (list: ReadonlyArray<Spec>) => {
  const lines: Array<string> = []
  const expected: Array<BatchFileRow> = []
  for (const s of list) {
    for (let i = 0; i < s.blanksBefore; i++) lines.push(i % 2 === 0 ? "" : "  \t")
    const { line, body } = lineOf(s)
    lines.push(JSON.stringify(line))
    expected.push({ custom_id: s.customId ?? `line-${lines.length}`, body })
  }
  return { text: lines.join("\n"), expected }
}

describe("parseBatchFile laws", () => {
  it("a file of rows of mixed forms parses to those rows in order, each missing id being line-<its line>", () => {
    fc.assert(
      fc.property(specs, (list) => {
        const { text, expected } = fileOf(list)
        expect(rows(text, { model: MODEL })).toEqual(expected)
      }),
    )
  })

  it("the same rows given as records parse as the lines of a file without blank lines", () => {
    fc.assert(
      fc.property(specs, (list) => {
        const records = list.map((s) => lineOf(s).line)
        const fromRecords = parseBatchRecords(records, { model: MODEL })
        expect(fromRecords).toEqual(parseBatchFile(records.map((r) => JSON.stringify(r)).join("\n"), { model: MODEL }))
        expect(Either.isRight(fromRecords)).toBe(true)
      }),
    )
  })

  it("reads a file of 50,000 lines and 32 MiB in one pass", () => {
    const padding = "x".repeat(600)
    const text = Array.from({ length: 50_000 }, (_, i) => JSON.stringify({ custom_id: `r${i}`, body: chat(`${i} ${padding}`) })).join("\n")
    expect(Buffer.byteLength(text)).toBeGreaterThan(32 * 1024 * 1024)
    const parsed = rows(text, { model: MODEL })
    expect(parsed.length).toBe(50_000)
    expect(parsed[49_999]?.custom_id).toBe("r49999")
  })
})

const row = (id: string, size: number): BatchFileRow => ({ custom_id: id, body: chat("y".repeat(size)) })

const rowsArb = fc
  .array(fc.nat(300), { maxLength: 60 })
  .map((sizes) => sizes.map((size, i) => row(`r${i}`, size)))

describe("splitBatches laws", () => {
  const limitsArb = fc.record({
    maxRows: fc.integer({ min: 1, max: 12 }),
    maxBodyBytes: fc.integer({ min: 450, max: 4000 }),
    envelopeBytes: fc.integer({ min: 2, max: 100 }),
  })

  it("parts keep the rows' order, concatenate back to the input, and each fits both limits", () => {
    fc.assert(
      fc.property(rowsArb, limitsArb, (input, limits) => {
        const split = splitBatches(input, limits)
        if (Either.isLeft(split)) {
          const big = input.find((r) => createBodyBytes([r], limits.envelopeBytes) > limits.maxBodyBytes)
          expect(split.left.custom_id).toBe(big?.custom_id)
          return
        }
        expect(split.right.flat()).toEqual(input)
        for (const part of split.right) {
          expect(part.length).toBeGreaterThan(0)
          expect(part.length).toBeLessThanOrEqual(limits.maxRows)
          expect(createBodyBytes(part, limits.envelopeBytes)).toBeLessThanOrEqual(limits.maxBodyBytes)
        }
      }),
    )
  })

  it("parts are filled greedily: no part but the last could also have taken the next part's first row", () => {
    fc.assert(
      fc.property(rowsArb, limitsArb, (input, limits) => {
        const split = splitBatches(input, limits)
        fc.pre(Either.isRight(split))
        const parts = Either.getOrThrow(split)
        for (let i = 0; i + 1 < parts.length; i++) {
          const grown = [...(parts[i] ?? []), ...(parts[i + 1] ?? []).slice(0, 1)]
          expect(grown.length > limits.maxRows || createBodyBytes(grown, limits.envelopeBytes) > limits.maxBodyBytes).toBe(true)
        }
      }),
    )
  })

  it("the first part is the longest prefix whose create body fits, to the byte", () => {
    fc.assert(
      fc.property(
        rowsArb.filter((r) => r.length >= 2),
        fc.nat(),
        fc.constantFrom(0, -1),
        fc.integer({ min: 2, max: 100 }),
        (input, pick, delta, envelopeBytes) => {
          const k = 1 + (pick % (input.length - 1)) + 1
          const maxBodyBytes = createBodyBytes(input.slice(0, k), envelopeBytes) + delta
          const rest = input.slice(k).filter((r) => createBodyBytes([r], envelopeBytes) <= maxBodyBytes)
          const parts = Either.getOrThrow(splitBatches([...input.slice(0, k), ...rest], { maxRows: 1_000, maxBodyBytes, envelopeBytes }))
          expect(parts[0]?.length).toBe(k + delta)
        },
      ),
    )
  })

  it("the serialized create body of each part is exactly what createBodyBytes counts", () => {
    fc.assert(
      fc.property(rowsArb, fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8, unit: "binary" }), { maxKeys: 3 }), (input, metadata) => {
        const envelope = Buffer.byteLength(JSON.stringify({ requests: [], metadata }))
        const split = Either.getOrThrow(splitBatches(input, { maxRows: 7, maxBodyBytes: 5_000, envelopeBytes: envelope }))
        for (const part of split) {
          expect(Buffer.byteLength(JSON.stringify({ requests: part, metadata }))).toBe(createBodyBytes(part, envelope))
        }
      }),
    )
  })

  it("the default envelope room holds the largest valid metadata", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ minLength: 64, maxLength: 64, unit: "binary" }), { minLength: 16, maxLength: 16 }),
        fc.array(fc.string({ minLength: 512, maxLength: 512, unit: fc.constantFrom("\u0001", "\u2028", "\uD83D\uDE00", '"') }), { minLength: 16, maxLength: 16 }),
        (keys, values) => {
          const metadata = Object.fromEntries(keys.map((k, i) => [k, values[i] ?? ""]))
          expect(Buffer.byteLength(JSON.stringify({ requests: [], metadata }))).toBeLessThanOrEqual(defaultEnvelopeBytes)
        },
      ),
      { numRuns: 20 },
    )
  })

  it("a row too large for any batch is refused by its custom_id", () => {
    const split = splitBatches([row("small", 1), row("huge", 5_000), row("after", 1)], { maxRows: 10, maxBodyBytes: 1_000, envelopeBytes: 20 })
    expect(Either.isLeft(split) && split.left).toMatchObject({ _tag: "BatchRowTooLarge", custom_id: "huge" })
    expect(Either.isLeft(split) && split.left.message).toContain('"huge"')
  })

  it("an empty input is no batches", () => {
    expect(splitBatches([], { maxRows: 1, maxBodyBytes: 100 })).toEqual(Either.right([]))
  })
})
