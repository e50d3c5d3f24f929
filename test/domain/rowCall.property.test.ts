import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { responsesRowResult, rowRequest } from "../../src/domain/batch/rowCall.js"
import { completionTokens } from "../../src/domain/batch/tokenTotals.js"
import { validateCreateBatch } from "../../src/domain/batch/validateCreate.js"
import { usageTokens } from "../../src/domain/completion/completion.js"
import { catalog } from "./arbitraries/createBatch.js"
import { embeddingsBody, endpointCatalog } from "./arbitraries/embeddingsBody.js"

type Obj = Record<string, unknown>

const count = fc.nat({ max: 100_000 })

const completion = fc.record({
  text: fc.string({ maxLength: 60 }),
  finish: fc.constantFrom("stop", "length"),
  usage: fc.record(
    {
      prompt_tokens: count,
      completion_tokens: count,
      total_tokens: count,
      prompt_tokens_details: fc.record({ cached_tokens: count }),
      completion_tokens_details: fc.record({ reasoning_tokens: count }),
    },
    { requiredKeys: ["prompt_tokens", "completion_tokens"] },
  ),
}).map(({ text, finish, usage }) => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: finish }],
  usage,
}))

const responsesBody: fc.Arbitrary<Obj> = fc.record(
  {
    model: fc.constantFrom("glm-5.3-flash", "qwen3.6-35b"),
    input: fc.oneof(
      fc.string({ minLength: 1, maxLength: 30 }),
      fc.array(fc.record({ role: fc.constantFrom("user", "assistant", "system"), content: fc.string({ maxLength: 30 }) }), { minLength: 1, maxLength: 3 }),
    ),
    instructions: fc.string({ maxLength: 30 }),
    max_output_tokens: fc.integer({ min: 1, max: 4096 }),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    text: fc.constant({ format: { type: "json_object" } }),
  },
  { requiredKeys: ["model", "input"] },
)

const hex = fc.stringMatching(/^[0-9a-f]{32}$/)

describe("a row's call by its batch's endpoint", () => {
  it("a Responses row sends upstream the very chat body a chat batch stores for the same body", () => {
    fc.assert(
      fc.property(responsesBody, (body) => {
        const asResponses = validateCreateBatch({ requests: [{ custom_id: "r", url: "/v1/responses", body }] }, catalog)
        const asChat = validateCreateBatch({ requests: [{ custom_id: "r", body }] }, catalog)
        if (Either.isLeft(asResponses) || Either.isLeft(asChat)) throw new Error("a valid body was refused")
        const stored = asResponses.right.requests[0]!.body
        expect(stored).toBe(body)
        const request = rowRequest("/v1/responses", JSON.stringify(stored))
        if (request._tag !== "Send") throw new Error(request.error.message)
        expect(request.path).toBe("/chat/completions")
        expect(JSON.parse(request.body)).toEqual(asChat.right.requests[0]!.body)
        expect(request.responses).toEqual(body)
      }),
    )
  })

  it("an embeddings row is sent as stored, to the upstream's /embeddings", () => {
    fc.assert(
      fc.property(embeddingsBody, (body) => {
        const valid = validateCreateBatch({ requests: [{ custom_id: "e", url: "/v1/embeddings", body }] }, endpointCatalog)
        if (Either.isLeft(valid)) throw new Error(valid.left.message)
        const stored = JSON.stringify(valid.right.requests[0]!.body)
        expect(rowRequest("/v1/embeddings", stored)).toEqual({ _tag: "Send", body: stored, path: "/embeddings", responses: undefined })
      }),
      { numRuns: 50 },
    )
  })

  it("a stored body no create would have stored fails the row without a call", () => {
    expect(rowRequest("/v1/responses", "{not json")).toMatchObject({ _tag: "Refuse", error: { code: "invalid_request" } })
    expect(rowRequest("/v1/responses", JSON.stringify({ model: "m", input: [] }))).toMatchObject({ _tag: "Refuse", error: { code: "invalid_request" } })
  })
})

describe("a Responses row's result", () => {
  it("is the Response of its completion, named from its request id, at its batch's creation", () => {
    fc.assert(
      fc.property(responsesBody, completion, hex, fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }), (body, answer, id, createdAt) => {
        const result = responsesRowResult(body, answer, { requestId: `req_${id}`, model: "glm-5.3-flash", createdAt, completedAt: createdAt + 5_000 })
        expect(result).toMatchObject({ id: `resp_${id}`, object: "response", model: "glm-5.3-flash", created_at: Math.floor(createdAt / 1000), error: null })
        expect(result.status).toBe(answer.choices[0]!.finish_reason === "length" ? "incomplete" : "completed")
        expect(result.instructions).toBe(typeof body["instructions"] === "string" ? body["instructions"] : null)
        const message = result.output.find((item) => item.type === "message")
        expect(message).toMatchObject({ id: `msg_${id}`, content: [{ type: "output_text", text: answer.choices[0]!.message.content }] })
      }),
    )
  })

  it("counts the tokens its completion counts, in the batch's usage and in the completion feed", () => {
    fc.assert(
      fc.property(responsesBody, completion, hex, (body, answer, id) => {
        const result = responsesRowResult(body, answer, { requestId: `req_${id}`, model: "m", createdAt: 0, completedAt: 0 })
        expect(completionTokens(result)).toEqual(completionTokens(answer))
        expect(usageTokens(result)).toEqual(usageTokens(answer))
      }),
    )
  })
})
