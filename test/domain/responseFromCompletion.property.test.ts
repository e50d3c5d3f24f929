import { Either, Schema as S } from "effect"
import fc from "fast-check"
import type { Response as OpenAIResponseType } from "openai/resources/responses/responses"
import { describe, expect, it } from "vitest"
import { echoOf } from "../../src/domain/response/echo.js"
import { type ResponseContext, type UpstreamReply, responseFrom } from "../../src/domain/response/fromCompletion.js"

/*
 * The mapping from a chat completion's answer to a Response object, against both vendors' clients
 * written down independently here: sference's SDK (pydantic models, exact literal sets, a defaulted
 * field absent rather than null, a discriminated output union) and the `openai` package's Response
 * type (the compiler checks the schema below is one). Whatever the upstream answers, both accept the
 * object; the model's text, tool calls, reasoning and token counts come through unchanged.
 */

// ---------------------------------------------------------------------------------------------
// sference's SDK, independently

const SferenceText = S.Struct({ type: S.optional(S.Literal("output_text")), text: S.String, annotations: S.optional(S.Array(S.Unknown)) })
const ItemStatus = S.Literal("completed", "in_progress", "incomplete")
const SferenceItem = S.Union(
  S.Struct({
    type: S.Literal("message"),
    id: S.String,
    role: S.optional(S.Literal("assistant")),
    status: S.optional(ItemStatus),
    content: S.Array(SferenceText),
  }),
  S.Struct({
    type: S.Literal("reasoning"),
    id: S.String,
    summary: S.optional(S.Array(S.Struct({ type: S.optional(S.Literal("summary_text")), text: S.String }))),
  }),
  S.Struct({
    type: S.Literal("function_call"),
    id: S.String,
    call_id: S.String,
    name: S.String,
    arguments: S.optional(S.String),
    status: S.optional(ItemStatus),
  }),
)
const SferenceResponse = S.Struct({
  id: S.String,
  object: S.optional(S.Literal("response")),
  created_at: S.Int,
  model: S.String,
  status: S.Literal("in_progress", "completed", "failed", "cancelled", "incomplete"),
  incomplete_details: S.optional(S.NullOr(S.Struct({ reason: S.Literal("max_output_tokens", "content_filter") }))),
  output: S.optional(S.NullOr(S.Array(SferenceItem))),
  error: S.optional(S.NullOr(S.Struct({ code: S.String, message: S.String }))),
  usage: S.optional(
    S.NullOr(
      S.Struct({
        input_tokens: S.Int,
        output_tokens: S.Int,
        total_tokens: S.Int,
        input_tokens_details: S.optional(S.Struct({ cached_tokens: S.optional(S.Int) })),
        output_tokens_details: S.optional(S.Struct({ reasoning_tokens: S.optional(S.Int) })),
      }),
    ),
  ),
})

// ---------------------------------------------------------------------------------------------
// OpenAI's Response type, independently

const Count = S.NonNegativeInt
const mutableStruct = <F extends S.Struct.Fields>(fields: F) => S.mutable(S.Struct(fields))
const OpenAIItem = S.Union(
  mutableStruct({
    id: S.String,
    content: S.mutable(S.Array(mutableStruct({ annotations: S.mutable(S.Tuple()), text: S.String, type: S.Literal("output_text") }))),
    role: S.Literal("assistant"),
    status: ItemStatus,
    type: S.Literal("message"),
  }),
  mutableStruct({
    id: S.String,
    summary: S.mutable(S.Array(mutableStruct({ text: S.String, type: S.Literal("summary_text") }))),
    type: S.Literal("reasoning"),
  }),
  mutableStruct({ arguments: S.String, call_id: S.String, name: S.String, type: S.Literal("function_call"), id: S.String, status: ItemStatus }),
)
const OpenAIResponse = mutableStruct({
  id: S.String,
  object: S.Literal("response"),
  created_at: S.Number,
  status: S.Literal("completed", "failed", "in_progress", "cancelled", "queued", "incomplete"),
  error: S.NullOr(
    mutableStruct({
      // prettier-ignore
      code: S.Literal("server_error", "rate_limit_exceeded", "invalid_prompt", "data_residency_mismatch", "bio_policy", "misalignment_policy_violation", "vector_store_timeout", "invalid_image", "invalid_image_format", "invalid_base64_image", "invalid_image_url", "image_too_large", "image_too_small", "image_parse_error", "image_content_policy_violation", "invalid_image_mode", "image_file_too_large", "unsupported_image_media_type", "empty_image_file", "failed_to_download_image", "image_file_not_found"),
      message: S.String,
    }),
  ),
  incomplete_details: S.NullOr(mutableStruct({ reason: S.Literal("max_output_tokens", "max_messages", "content_filter", "steered") })),
  instructions: S.NullOr(S.String),
  metadata: S.NullOr(S.mutable(S.Record({ key: S.String, value: S.String }))),
  model: S.String,
  output: S.mutable(S.Array(OpenAIItem)),
  parallel_tool_calls: S.Boolean,
  temperature: S.NullOr(S.Number),
  top_p: S.NullOr(S.Number),
  usage: S.optional(
    mutableStruct({
      input_tokens: Count,
      input_tokens_details: mutableStruct({ cached_tokens: Count, cache_write_tokens: Count }),
      output_tokens: Count,
      output_tokens_details: mutableStruct({ reasoning_tokens: Count }),
      total_tokens: Count,
    }),
  ),
  service_tier: S.optional(S.NullOr(S.Literal("auto", "default", "flex", "scale", "priority", "fast", "ultrafast"))),
  background: S.optional(S.NullOr(S.Boolean)),
  completed_at: S.optional(S.NullOr(S.Number)),
  max_output_tokens: S.optional(S.NullOr(S.Number)),
})
type Checked = Pick<
  OpenAIResponseType,
  // prettier-ignore
  "id" | "object" | "created_at" | "status" | "error" | "incomplete_details" | "instructions" | "metadata" | "model" | "output" | "parallel_tool_calls" | "temperature" | "top_p" | "usage" | "service_tier" | "background" | "completed_at" | "max_output_tokens"
>
const _isOpenAIs = (response: typeof OpenAIResponse.Type): Checked => response

// ---------------------------------------------------------------------------------------------
// Upstream answers

const text = fc.string({ maxLength: 30 })
const nonEmpty = fc.string({ minLength: 1, maxLength: 30 })
const toolCall = fc.record(
  {
    id: fc.string({ maxLength: 12 }),
    type: fc.constant("function"),
    function: fc.record(
      { name: nonEmpty, arguments: fc.oneof(fc.json(), fc.dictionary(fc.string({ maxLength: 5 }), fc.integer()), fc.constant(null)) },
      { requiredKeys: ["name"] },
    ),
  },
  { requiredKeys: ["function"] },
)
const message = fc.record(
  {
    role: fc.constant("assistant"),
    content: fc.oneof(text, fc.constant(null), fc.array(fc.record({ type: fc.constant("text"), text }), { maxLength: 3 })),
    refusal: fc.oneof(fc.constant(null), text),
    tool_calls: fc.array(toolCall, { maxLength: 3 }),
    reasoning_content: text,
    reasoning: text,
  },
  { requiredKeys: ["role"] },
)
const count = fc.oneof({ weight: 4, arbitrary: fc.nat({ max: 100_000 }) }, fc.constantFrom(-1, 1.5, null, "7", Number.NaN))
const usage = fc.record(
  {
    prompt_tokens: count,
    completion_tokens: count,
    total_tokens: count,
    prompt_tokens_details: fc.oneof(fc.constant(null), fc.record({ cached_tokens: count, cache_write_tokens: count }, { requiredKeys: [] })),
    completion_tokens_details: fc.oneof(fc.constant(null), fc.record({ reasoning_tokens: count })),
  },
  { requiredKeys: [] },
)
const finishReason = fc.oneof(fc.constantFrom("stop", "length", "tool_calls", "content_filter", null, "constructor"), fc.string({ maxLength: 12 }))
const completion = fc.record(
  {
    id: fc.constant("chatcmpl-1"),
    object: fc.constant("chat.completion"),
    choices: fc.tuple(fc.record({ index: fc.constant(0), message, finish_reason: finishReason })),
    usage,
  },
  { requiredKeys: ["choices"] },
)
const answered = (body: unknown, status = 200): UpstreamReply => ({ _tag: "Answered", status, body })
const reply: fc.Arbitrary<UpstreamReply> = fc.oneof(
  { weight: 6, arbitrary: completion.map((body) => answered(body)) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 100, max: 599 }), fc.anything()).map(([status, body]) => answered(body, status)) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 400, max: 599 }), nonEmpty).map(([status, said]) => answered({ error: { message: said } }, status)) },
  { weight: 1, arbitrary: nonEmpty.map((said): UpstreamReply => ({ _tag: "NoAnswer", message: said })) },
)

const request = fc.record(
  {
    instructions: text,
    max_output_tokens: fc.integer({ min: 1, max: 4096 }),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    metadata: fc.dictionary(fc.constantFrom("project", "run", "owner"), fc.string({ maxLength: 8 })),
  },
  { requiredKeys: [] },
)

const contextFor = (body: Record<string, unknown>): ResponseContext => {
  let n = 0
  return {
    id: "resp_1",
    model: "m",
    createdAt: 1_700_000_000,
    completedAt: 1_700_000_002,
    serviceTier: "default",
    echo: echoOf(body),
    newId: (prefix) => `${prefix}_${++n}`,
  }
}

const accepted = <A, I>(schema: S.Schema<A, I>, value: unknown) => {
  const decoded = S.decodeUnknownEither(schema)(value)
  if (Either.isLeft(decoded)) expect.fail(`${JSON.stringify(value)}\n${decoded.left.message}`)
}

const choiceOf = (body: any) => body.choices[0]

describe("a chat completion's answer as a Response object", () => {
  it("whatever the upstream answers, both sference's SDK and OpenAI's Response type accept the object, as its JSON", () => {
    fc.assert(
      fc.property(reply, request, (upstream, body) => {
        const json = JSON.parse(JSON.stringify(responseFrom(upstream, contextFor(body))))
        accepted(SferenceResponse, json)
        accepted(OpenAIResponse, json)
      }),
      { numRuns: 1_000 },
    )
  })

  it("it fails, with an error and no output or usage, exactly when no 2xx chat completion came back", () => {
    fc.assert(
      fc.property(reply, (upstream) => {
        const response = responseFrom(upstream, contextFor({}))
        const choices = upstream._tag === "Answered" ? (upstream.body as any)?.choices : undefined
        const sent = Array.isArray(choices) ? choices[0]?.message : undefined
        const completed =
          upstream._tag === "Answered" && upstream.status >= 200 && upstream.status < 300 && typeof sent === "object" && sent !== null && !Array.isArray(sent)
        expect(response.status === "failed").toBe(!completed)
        if (response.status !== "failed") return
        expect(response.error?.message.length).toBeGreaterThan(0)
        expect(response.output).toEqual([])
        expect(response).not.toHaveProperty("usage")
        if (upstream._tag === "NoAnswer") expect(response.error).toEqual({ code: "server_error", message: upstream.message })
      }),
    )
  })

  it("a stop on length or a content filter is incomplete with that reason, every item incomplete too; any other is completed", () => {
    fc.assert(
      fc.property(completion, (body) => {
        const response = responseFrom(answered(body), contextFor({}))
        const finish = choiceOf(body).finish_reason
        const reason = finish === "length" ? "max_output_tokens" : finish === "content_filter" ? "content_filter" : null
        expect(response.status).toBe(reason === null ? "completed" : "incomplete")
        expect(response.incomplete_details).toEqual(reason === null ? null : { reason })
        expect(response.completed_at).toBe(reason === null ? 1_700_000_002 : null)
        for (const item of response.output) if (item.type !== "reasoning") expect(item.status).toBe(reason === null ? "completed" : "incomplete")
      }),
    )
  })

  it("text is preserved: a string content is the message's one output_text, text parts are joined in order", () => {
    fc.assert(
      fc.property(completion, (body) => {
        const sent = choiceOf(body).message
        const response = responseFrom(answered(body), contextFor({}))
        const messages = response.output.filter((item) => item.type === "message")
        const texts = messages.flatMap((item) => item.content.map((part) => part.text))
        const content = typeof sent.content === "string" ? sent.content : Array.isArray(sent.content) ? sent.content.map((p: any) => p.text).join("") : ""
        const expected = content === "" && typeof sent.refusal === "string" ? sent.refusal : content
        const calls = sent.tool_calls?.length ?? 0
        expect(texts).toEqual(expected === "" && calls > 0 ? [] : [expected])
      }),
    )
  })

  it("each tool call is a function_call item, in order, with its name, call id and arguments as a string", () => {
    fc.assert(
      fc.property(completion, (body) => {
        const sent = choiceOf(body).message.tool_calls ?? []
        const calls = responseFrom(answered(body), contextFor({})).output.filter((item) => item.type === "function_call")
        expect(calls.map((c) => c.name)).toEqual(sent.map((c: any) => c.function.name))
        sent.forEach((call: any, i: number) => {
          const args = call.function.arguments
          expect(calls[i]!.arguments).toBe(typeof args === "string" ? args : args === undefined || args === null ? "{}" : JSON.stringify(args))
          if (call.id !== undefined && call.id !== "") expect(calls[i]!.call_id).toBe(call.id)
          else expect(calls[i]!.call_id).toMatch(/^call_/)
        })
      }),
    )
  })

  it("reasoning the upstream gives is one reasoning item, first; none without it", () => {
    fc.assert(
      fc.property(completion, (body) => {
        const sent = choiceOf(body).message
        const reasoning = [sent.reasoning_content, sent.reasoning].find((r) => typeof r === "string" && r.length > 0)
        const output = responseFrom(answered(body), contextFor({})).output
        const items = output.filter((item) => item.type === "reasoning")
        if (reasoning === undefined) {
          expect(items).toEqual([])
          return
        }
        expect(output[0]).toEqual({ type: "reasoning", id: expect.stringMatching(/^rs_/), summary: [{ type: "summary_text", text: reasoning }] })
        expect(items).toHaveLength(1)
      }),
    )
  })

  it("usage: prompt tokens as input, completion as output, the upstream's total (else their sum), details carried; a count that is not one is 0", () => {
    const asCount = (v: unknown) => (Number.isSafeInteger(v) && (v as number) >= 0 ? v : 0)
    fc.assert(
      fc.property(completion, (body) => {
        const sent = (body as any).usage ?? {}
        const usage = responseFrom(answered(body), contextFor({})).usage!
        expect(usage).toEqual({
          input_tokens: asCount(sent.prompt_tokens),
          input_tokens_details: {
            cached_tokens: asCount(sent.prompt_tokens_details?.cached_tokens),
            cache_write_tokens: asCount(sent.prompt_tokens_details?.cache_write_tokens),
          },
          output_tokens: asCount(sent.completion_tokens),
          output_tokens_details: { reasoning_tokens: asCount(sent.completion_tokens_details?.reasoning_tokens) },
          total_tokens: Number.isSafeInteger(sent.total_tokens) && sent.total_tokens >= 0 ? sent.total_tokens : usage.input_tokens + usage.output_tokens,
        })
        if (usage.input_tokens === sent.prompt_tokens && usage.output_tokens === sent.completion_tokens && sent.total_tokens === sent.prompt_tokens + sent.completion_tokens)
          expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens)
      }),
    )
  })

  it("every item has its own id, prefixed by its kind; the request's settings and metadata are answered back", () => {
    fc.assert(
      fc.property(completion, request, (body, sent) => {
        const response = responseFrom(answered(body), contextFor(sent))
        const ids = response.output.map((item) => item.id)
        expect(new Set(ids).size).toBe(ids.length)
        for (const item of response.output) expect(item.id).toMatch({ message: /^msg_/, function_call: /^fc_/, reasoning: /^rs_/ }[item.type])
        expect(response).toMatchObject({
          id: "resp_1",
          object: "response",
          created_at: 1_700_000_000,
          model: "m",
          background: false,
          service_tier: "default",
          instructions: sent.instructions ?? null,
          max_output_tokens: sent.max_output_tokens ?? null,
          temperature: sent.temperature ?? null,
          metadata: sent.metadata ?? {},
        })
      }),
    )
  })
})
