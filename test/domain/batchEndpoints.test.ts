import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { CreateMessage as M, rowMessage } from "../../src/domain/batch/createMessages.js"
import { createLimits } from "../../src/domain/batch/createLimits.js"
import type { BatchEndpoint } from "../../src/domain/batch/endpoint.js"
import { ResponsesMessage as R } from "../../src/domain/batch/responsesBody.js"
import {
  CreateRejected,
  type ModelAccess,
  type RowLabels,
  type ValidBatch,
  type ValidRequest,
  validateBatchLine,
  validateCreateBatch,
} from "../../src/domain/batch/validateCreate.js"
import { catalog as chatOnlyCatalog, chatBody } from "./arbitraries/createBatch.js"
import { bothModel, chatModel, embeddingModel, embeddingsBody, embeddingsCorruption, endpointCatalog } from "./arbitraries/embeddingsBody.js"

type Obj = Record<string, unknown>

const validate = (input: unknown, catalog: ModelAccess = endpointCatalog) => validateCreateBatch(input, catalog)

const accepted = (input: unknown, catalog?: ModelAccess): ValidBatch => {
  const result = validate(input, catalog)
  if (Either.isLeft(result)) throw new Error(`expected acceptance, got ${result.left.message}`)
  return result.right
}

const rejection = (input: unknown, catalog?: ModelAccess): CreateRejected => {
  const result = validate(input, catalog)
  if (Either.isRight(result)) throw new Error(`expected a rejection, got ${JSON.stringify(result.right).slice(0, 200)}`)
  return result.left
}

const embedRow = (custom_id: string, body: Obj = {}, url: string | undefined = "/v1/embeddings") => ({
  custom_id,
  method: "POST",
  ...(url === undefined ? {} : { url }),
  body: { model: embeddingModel, input: "The food was delicious.", ...body },
})

const chatRow = (custom_id: string, url: string | undefined = "/v1/chat/completions") => ({
  custom_id,
  ...(url === undefined ? {} : { url }),
  body: { model: chatModel, messages: [{ role: "user", content: "hi" }] },
})

const responsesRow = (custom_id: string, body: Obj = {}) => ({
  custom_id,
  method: "POST",
  url: "/v1/responses",
  body: { model: chatModel, input: "Name a prime number.", ...body },
})

describe("a batch's endpoint", () => {
  it("is chat completions when no row names one, and the batch answers as it did", () => {
    const valid = accepted({ requests: [chatRow("a", undefined), chatRow("b", undefined)] })
    expect(valid.endpoint).toBe("/v1/chat/completions")
  })

  it("is the endpoint the rows name; rows that name none follow it", () => {
    const valid = accepted({ requests: [embedRow("a", {}, undefined), embedRow("b"), embedRow("c", {}, undefined)] })
    expect(valid.endpoint).toBe("/v1/embeddings")
    expect(valid.requests.map((r) => r.custom_id)).toEqual(["a", "b", "c"])
  })

  it("refuses a row naming another endpoint than the batch's, naming the row and its url", () => {
    const error = rejection({ requests: [chatRow("q-1"), embedRow("e-1")] })
    expect(error.message).toBe(
      "requests[1] (custom_id 'e-1'): 'url' is '/v1/embeddings' but this batch calls '/v1/chat/completions': every request of a batch calls the same endpoint",
    )
    expect(error.param).toBe("requests[1].url")
  })

  it("refuses an endpoint no batch can call", () => {
    const error = rejection({ requests: [{ ...embedRow("e-1"), url: "/v1/completions" }] })
    expect(error.message).toBe(`requests[0] (custom_id 'e-1'): ${M.urlUnknown}`)
    expect(error.param).toBe("requests[0].url")
  })

  it("any row naming another endpoint than the first one named is refused, naming that row", () => {
    const endpoints: ReadonlyArray<BatchEndpoint> = ["/v1/chat/completions", "/v1/embeddings", "/v1/responses"]
    const rowOf = (endpoint: BatchEndpoint, id: string, named: boolean) =>
      endpoint === "/v1/embeddings"
        ? embedRow(id, { model: bothModel }, named ? endpoint : undefined)
        : endpoint === "/v1/responses"
          ? { ...responsesRow(id, { model: bothModel }), ...(named ? {} : { url: undefined }) }
          : { ...chatRow(id, named ? endpoint : undefined), body: { model: bothModel, messages: [{ role: "user", content: "x" }] } }
    const arb = fc
      .tuple(fc.constantFrom(...endpoints), fc.constantFrom(...endpoints), fc.integer({ min: 1, max: 8 }), fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }))
      .filter(([batch, other]) => batch !== other)
      .chain(([batch, other, n, named]) => fc.tuple(fc.constant(batch), fc.constant(other), fc.constant(n), fc.constant(named), fc.integer({ min: 1, max: n })))
    fc.assert(
      fc.property(arb, ([batch, other, n, named, odd]) => {
        // Row 0 names the batch's endpoint; the others name it or none, but for one that names another.
        const requests = Array.from({ length: n + 1 }, (_, i) => (i === odd ? rowOf(other, `r${i}`, true) : rowOf(batch, `r${i}`, i === 0 || named[i - 1]!)))
        const error = rejection({ requests })
        expect(error.message).toBe(rowMessage(odd, `r${odd}`, M.urlNotTheBatchEndpoint(other, batch)))
        expect(error.param).toBe(`requests[${odd}].url`)
      }),
    )
  })
})

describe("a model serves the endpoints its catalog entry names", () => {
  it("a chat-only model is refused in an embeddings batch, naming the row", () => {
    const error = rejection({ requests: [embedRow("e-1"), embedRow("e-2", { model: chatModel })] })
    expect(error.message).toBe(
      "requests[1] (custom_id 'e-2'): Model 'glm-5.3-flash' does not serve /v1/embeddings, the endpoint of this batch; it serves /v1/chat/completions, /v1/responses",
    )
    expect(error.param).toBe("requests[1].body.model")
  })

  it("an embeddings-only model is refused for chat and Responses rows", () => {
    const chat = rejection({ requests: [{ ...chatRow("c-1"), body: { model: embeddingModel, messages: [{ role: "user", content: "hi" }] } }] })
    expect(chat.message).toBe(
      "requests[0] (custom_id 'c-1'): Model 'qwen3-embedding-0.6b' does not serve /v1/chat/completions, the endpoint of this batch; it serves /v1/embeddings",
    )
    const responses = rejection({ requests: [responsesRow("r-1", { model: embeddingModel })] })
    expect(responses.message).toMatch(/^requests\[0\] \(custom_id 'r-1'\): Model 'qwen3-embedding-0\.6b' does not serve \/v1\/responses/)
    expect(responses.param).toBe("requests[0].body.model")
  })

  it("a catalog that names no endpoints serves chat completions and Responses rows only", () => {
    expect(accepted({ requests: [responsesRow("r-1")] }, chatOnlyCatalog).endpoint).toBe("/v1/responses")
    expect(rejection({ requests: [embedRow("e-1", { model: chatModel })] }, chatOnlyCatalog).message).toBe(
      "requests[0] (custom_id 'e-1'): Model 'glm-5.3-flash' does not serve /v1/embeddings, the endpoint of this batch; it serves /v1/chat/completions, /v1/responses",
    )
  })

  it("an unknown model reads as today, whatever the endpoint", () => {
    expect(rejection({ requests: [embedRow("e-1", { model: "no-such-model" })] }).message).toBe("requests[0] (custom_id 'e-1'): Model 'no-such-model' not found")
  })
})

describe("embeddings rows", () => {
  it("any valid embeddings body is accepted and stored as sent", () => {
    fc.assert(
      fc.property(fc.array(embeddingsBody, { minLength: 1, maxLength: 5 }), (bodies) => {
        const requests = bodies.map((body, i) => ({ custom_id: `e-${i}`, url: "/v1/embeddings", body }))
        const valid = accepted({ requests })
        expect(valid.endpoint).toBe("/v1/embeddings")
        valid.requests.forEach((r, i) => {
          expect(r.body).toBe(bodies[i])
          expect(r.model).toBe(bodies[i]!["model"])
        })
      }),
      { numRuns: 200 },
    )
  })

  it("any single spoiled field is refused, naming that field of that row", () => {
    const arb = fc.tuple(fc.array(embeddingsBody, { minLength: 1, maxLength: 4 }), embeddingsCorruption).chain(([bodies, c]) =>
      fc.tuple(fc.constant(bodies), fc.constant(c), fc.nat({ max: bodies.length - 1 })),
    )
    fc.assert(
      fc.property(arb, ([bodies, c, k]) => {
        const requests = bodies.map((body, i) => ({ custom_id: `e-${i}`, url: "/v1/embeddings", body: i === k ? { ...body, ...c.patch } : body }))
        const error = rejection({ requests })
        expect(error.message).toBe(`requests[${k}] (custom_id 'e-${k}'): body.${c.path} ${c.problem}`)
        expect(error.param).toBe(`requests[${k}].body.${c.path}`)
      }),
      { numRuns: 300 },
    )
  })

  it.each([
    [{ input: undefined }, "body.input must be a non-empty string, an array of strings, an array of token ids or an array of token-id arrays, got nothing", "body.input"],
    [{ model: undefined }, "body.model must be a string naming a model, got nothing", "body.model"],
    [{ model: "auto" }, "Model 'auto' is an auto model, which cannot be used in a batch; name a specific model", "body.model"],
    [{ input: [[1, 2], [3, -1]] }, "body.input[1][1] must be a token id (an integer of at least 0), got -1", "body.input[1][1]"],
    [{ dimensions: -8 }, "body.dimensions must be an integer of at least 1, got -8", "body.dimensions"],
    [{ encoding_format: "base85" }, 'body.encoding_format must be one of float, base64, got "base85"', "body.encoding_format"],
  ])("refuses %j with its message", (patch, detail, param) => {
    const error = rejection({ requests: [embedRow("e-1", patch)] })
    expect(error.message).toBe(`requests[0] (custom_id 'e-1'): ${detail}`)
    expect(error.param).toBe(`requests[0].${param}`)
  })

  it("refuses a body that is not an object in the endpoint's words", () => {
    expect(rejection({ requests: [{ custom_id: "e-1", url: "/v1/embeddings", body: "text" }] }).message).toBe(
      "requests[0] (custom_id 'e-1'): 'body' must be an embeddings request object",
    )
  })

  it("accepts 2048 inputs and token arrays, with fields the API does not document passed through", () => {
    const body = { model: embeddingModel, input: Array.from({ length: 2048 }, (_, i) => [i, i + 1]), truncate_prompt_tokens: 8 }
    expect(accepted({ requests: [{ custom_id: "e", url: "/v1/embeddings", body }] }).requests[0]!.body).toBe(body)
  })
})

describe("Responses rows", () => {
  it("are stored as sent, Responses-shaped, and checked as deeply as a chat row converted from them", () => {
    const body = { model: chatModel, instructions: "Be brief.", input: [{ role: "user", content: "Hi" }], max_output_tokens: 20, temperature: 0.5 }
    const valid = accepted({ requests: [{ custom_id: "r-1", url: "/v1/responses", body }] })
    expect(valid.endpoint).toBe("/v1/responses")
    expect(valid.requests[0]!.body).toBe(body)
  })

  it.each([
    [{ messages: [{ role: "user", content: "hi" }], input: undefined }, M.responsesRowMessages, "body.input"],
    [{ input: undefined }, R.inputNotTextOrList, "body.input"],
    [{ messages: [{ role: "user", content: "hi" }] }, R.messagesAndInput, "body.input"],
    [{ input: "" }, R.inputNotTextOrList, "body.input"],
    [{ background: true }, R.background, "body.background"],
    [{ temperature: "hot" }, 'body.temperature must be a number from 0 to 2, got "hot"', "body.temperature"],
    [{ max_output_tokens: 0 }, "body.max_output_tokens must be an integer of at least 1, got 0", "body.max_output_tokens"],
    [{ previous_response_id: "resp_1" }, R.stateful("previous_response_id"), "body.previous_response_id"],
  ])("refuses %j with its message", (patch, detail, param) => {
    const error = rejection({ requests: [responsesRow("r-1", patch)] })
    expect(error.message).toBe(`requests[0] (custom_id 'r-1'): ${detail}`)
    expect(error.param).toBe(`requests[0].${param}`)
  })

  it("a Responses-shaped body in a chat batch is still converted and stored as chat", () => {
    const valid = accepted({ requests: [{ custom_id: "c-1", body: { model: chatModel, input: "Hi" } }] })
    expect(valid.endpoint).toBe("/v1/chat/completions")
    expect(valid.requests[0]!.body).toEqual({ model: chatModel, messages: [{ role: "user", content: "Hi" }] })
  })
})

describe("validateBatchLine: one line of an uploaded file at a time", () => {
  const lines: RowLabels = { name: (i) => `line ${i + 1}`, param: (i) => `line ${i + 1}` }
  const check = (rows: ReadonlyArray<unknown>, endpoint: BatchEndpoint) => {
    const seen = new Map<string, number>()
    const out: Array<ValidRequest | CreateRejected> = []
    rows.forEach((row, i) => out.push(validateBatchLine(row, i, lines, endpoint, endpointCatalog, createLimits(), seen)))
    return out
  }

  it("names the line and its custom_id, and a repeated custom_id by the line it repeats", () => {
    const [ok, bad, repeated] = check([embedRow("a"), embedRow("b", { dimensions: 0 }), embedRow("a")], "/v1/embeddings")
    expect(ok).toEqual({ custom_id: "a", model: embeddingModel, body: embedRow("a").body })
    expect(bad).toBeInstanceOf(CreateRejected)
    expect((bad as CreateRejected).message).toBe("line 2 (custom_id 'b'): body.dimensions must be an integer of at least 1, got 0")
    expect((bad as CreateRejected).param).toBe("line 2.body.dimensions")
    expect((repeated as CreateRejected).message).toBe("line 3 (custom_id 'a'): 'custom_id' repeats the one of line 1; custom_ids must be unique within the batch")
  })

  it("refuses a line naming another endpoint than the batch's", () => {
    const [line] = check([chatRow("c")], "/v1/embeddings")
    expect((line as CreateRejected).message).toBe(
      "line 1 (custom_id 'c'): 'url' is '/v1/chat/completions' but this batch calls '/v1/embeddings': every request of a batch calls the same endpoint",
    )
  })

  it("checks a chat line exactly as an inline row", () => {
    fc.assert(
      fc.property(chatBody, (body) => {
        const [line] = check([{ custom_id: "x", url: "/v1/chat/completions", body }], "/v1/chat/completions")
        expect(line).toEqual({ custom_id: "x", model: body["model"], body })
      }),
    )
  })
})
