import { Either, Schema as S } from "effect"
import fc from "fast-check"
import type { ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions"
import { describe, expect, it } from "vitest"
import { checkedFields } from "../../src/domain/chat/chatBody.js"
import { validateCreateBatch } from "../../src/domain/batch/validateCreate.js"

/*
 * The create validator against the OpenAI API written down independently here: a Schema of the
 * chat-completion request as the `openai` package types it (the compiler checks every body it takes
 * is an `openai` ChatCompletionCreateParamsNonStreaming), with the ranges its documentation states.
 * Whatever the validator accepts, this schema accepts; any single field of a valid body spoiled is
 * refused, naming that field; fields the API does not document pass through untouched.
 */

// ---------------------------------------------------------------------------------------------
// The API, independently

const mutableArray = <A, I, R>(item: S.Schema<A, I, R>) => S.mutable(S.Array(item))
const Dict = S.mutable(S.Record({ key: S.String, value: S.Unknown }))
const Between = (min: number, max: number) => S.Number.pipe(S.between(min, max))
const IntFrom = (min: number) => S.Int.pipe(S.greaterThanOrEqualTo(min))
// "a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64"
const Name = S.String.pipe(S.pattern(/^[a-zA-Z0-9_-]{1,64}$/))
// "maps tokens (specified by their token ID in the tokenizer) to an associated bias value from -100 to 100"
const LogitBias = S.mutable(S.Record({ key: S.String, value: Between(-100, 100) })).pipe(
  S.filter((bias) => Object.keys(bias).every((token) => /^\d+$/.test(token))),
)

const TextPart = S.Struct({ type: S.Literal("text"), text: S.String })
const RefusalPart = S.Struct({ type: S.Literal("refusal"), refusal: S.String })
const ImagePart = S.Struct({
  type: S.Literal("image_url"),
  image_url: S.Struct({ url: S.String, detail: S.optional(S.Literal("auto", "low", "high", "original")) }),
})
const AudioPart = S.Struct({ type: S.Literal("input_audio"), input_audio: S.Struct({ data: S.String, format: S.Literal("wav", "mp3") }) })
const FilePart = S.Struct({
  type: S.Literal("file"),
  file: S.Struct({ file_data: S.optional(S.String), file_id: S.optional(S.String), filename: S.optional(S.String) }),
})
const TextContent = S.Union(S.String, mutableArray(TextPart))

const ToolCall = S.Union(
  S.Struct({ id: S.String, type: S.Literal("function"), function: S.Struct({ name: S.String, arguments: S.String }) }),
  S.Struct({ id: S.String, type: S.Literal("custom"), custom: S.Struct({ name: S.String, input: S.String }) }),
)

const Message = S.Union(
  S.Struct({ role: S.Literal("system"), content: TextContent, name: S.optional(S.String) }),
  S.Struct({ role: S.Literal("developer"), content: TextContent, name: S.optional(S.String) }),
  S.Struct({
    role: S.Literal("user"),
    content: S.Union(S.String, mutableArray(S.Union(TextPart, ImagePart, AudioPart, FilePart))),
    name: S.optional(S.String),
  }),
  S.Struct({
    role: S.Literal("assistant"),
    content: S.optional(S.NullOr(S.Union(S.String, mutableArray(S.Union(TextPart, RefusalPart))))),
    name: S.optional(S.String),
    refusal: S.optional(S.NullOr(S.String)),
    tool_calls: S.optional(mutableArray(ToolCall)),
    function_call: S.optional(S.NullOr(S.Struct({ name: S.String, arguments: S.String }))),
    audio: S.optional(S.NullOr(S.Struct({ id: S.String }))),
  }),
  S.Struct({ role: S.Literal("tool"), content: TextContent, tool_call_id: S.String }),
  S.Struct({ role: S.Literal("function"), content: S.NullOr(S.String), name: S.String }),
)

const Tool = S.Union(
  S.Struct({
    type: S.Literal("function"),
    function: S.Struct({
      name: Name,
      description: S.optional(S.String),
      parameters: S.optional(Dict),
      strict: S.optional(S.NullOr(S.Boolean)),
    }),
  }),
  S.Struct({
    type: S.Literal("custom"),
    custom: S.Struct({
      name: S.String,
      description: S.optional(S.String),
      format: S.optional(
        S.Union(
          S.Struct({ type: S.Literal("text") }),
          S.Struct({ type: S.Literal("grammar"), grammar: S.Struct({ definition: S.String, syntax: S.Literal("lark", "regex") }) }),
        ),
      ),
    }),
  }),
)

const ToolChoice = S.Union(
  S.Literal("none", "auto", "required"),
  S.Struct({ type: S.Literal("function"), function: S.Struct({ name: S.String }) }),
  S.Struct({ type: S.Literal("custom"), custom: S.Struct({ name: S.String }) }),
  S.Struct({
    type: S.Literal("allowed_tools"),
    allowed_tools: S.Struct({ mode: S.Literal("auto", "required"), tools: mutableArray(Dict) }),
  }),
)

const ResponseFormat = S.Union(
  S.Struct({ type: S.Literal("text") }),
  S.Struct({ type: S.Literal("json_object") }),
  S.Struct({
    type: S.Literal("json_schema"),
    json_schema: S.Struct({
      name: Name,
      description: S.optional(S.String),
      schema: S.optional(Dict),
      strict: S.optional(S.NullOr(S.Boolean)),
    }),
  }),
)

const OpenAIChatRequest = S.Struct({
  model: S.String,
  messages: S.mutable(S.NonEmptyArray(Message)),
  max_tokens: S.optional(S.NullOr(IntFrom(1))),
  max_completion_tokens: S.optional(S.NullOr(IntFrom(1))),
  temperature: S.optional(S.NullOr(Between(0, 2))),
  top_p: S.optional(S.NullOr(Between(0, 1))),
  n: S.optional(S.NullOr(IntFrom(1))),
  stop: S.optional(S.NullOr(S.Union(S.String, mutableArray(S.String).pipe(S.maxItems(4))))),
  presence_penalty: S.optional(S.NullOr(Between(-2, 2))),
  frequency_penalty: S.optional(S.NullOr(Between(-2, 2))),
  logit_bias: S.optional(S.NullOr(LogitBias)),
  logprobs: S.optional(S.NullOr(S.Boolean)),
  top_logprobs: S.optional(S.NullOr(S.Int.pipe(S.between(0, 20)))),
  seed: S.optional(S.NullOr(S.Int)),
  tools: S.optional(mutableArray(Tool)),
  tool_choice: S.optional(ToolChoice),
  parallel_tool_calls: S.optional(S.Boolean),
  response_format: S.optional(ResponseFormat),
  stream: S.optional(S.NullOr(S.Literal(false))),
  stream_options: S.optional(S.Null),
  user: S.optional(S.String),
  reasoning_effort: S.optional(S.NullOr(S.Literal("none", "minimal", "low", "medium", "high", "xhigh", "max"))),
})

// The compiler's check that the schema is no wider than the `openai` package's request type.
const _isAnOpenAIRequest = (body: typeof OpenAIChatRequest.Type): ChatCompletionCreateParamsNonStreaming => body
void _isAnOpenAIRequest

const takenByTheAPI = (body: unknown) => Either.isRight(S.decodeUnknownEither(OpenAIChatRequest)(body))

// ---------------------------------------------------------------------------------------------
// Bodies

type Obj = Record<string, unknown>
const MODEL = "glm-5.3-flash"
const catalog = { isAvailable: (model: string) => model === MODEL }

const text = fc.string({ maxLength: 12 })
const fnName = fc.stringMatching(/^[a-zA-Z0-9_-]{1,20}$/)
const textPart = fc.record({ type: fc.constant("text"), text })
const textContent = fc.oneof(text, fc.array(textPart, { maxLength: 2 }))
const userPart = fc.oneof(
  textPart,
  fc.record({ type: fc.constant("image_url"), image_url: fc.record({ url: fc.webUrl(), detail: fc.constantFrom("auto", "low", "high", "original") }, { requiredKeys: ["url"] }) }),
  fc.record({ type: fc.constant("input_audio"), input_audio: fc.record({ data: text, format: fc.constantFrom("wav", "mp3") }) }),
  fc.record({ type: fc.constant("file"), file: fc.record({ file_id: text, filename: text }, { requiredKeys: [] }) }),
)
const toolCall = fc.record({ id: text, type: fc.constant("function"), function: fc.record({ name: fnName, arguments: text }) })

const message: fc.Arbitrary<Obj> = fc.oneof(
  fc.record({ role: fc.constantFrom("system", "developer"), content: textContent, name: text }, { requiredKeys: ["role", "content"] }),
  fc.record({ role: fc.constant("user"), content: fc.oneof(text, fc.array(userPart, { maxLength: 3 })), name: text }, { requiredKeys: ["role", "content"] }),
  fc.record({ role: fc.constant("assistant"), content: fc.oneof(text, fc.array(fc.oneof(textPart, fc.record({ type: fc.constant("refusal"), refusal: text })), { maxLength: 2 })), refusal: fc.option(text, { nil: null }) }, { requiredKeys: ["role", "content"] }),
  fc.record({ role: fc.constant("assistant"), content: fc.constant(null), tool_calls: fc.array(toolCall, { minLength: 1, maxLength: 2 }) }),
  fc.record({ role: fc.constant("tool"), content: textContent, tool_call_id: text }),
  fc.record({ role: fc.constant("function"), content: fc.option(text, { nil: null }), name: text }),
)

const functionTool = fc.record({
  type: fc.constant("function"),
  function: fc.record(
    { name: fnName, description: text, parameters: fc.constant({ type: "object", properties: {} }), strict: fc.option(fc.boolean(), { nil: null }) },
    { requiredKeys: ["name"] },
  ),
})

const nullable = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null, freq: 5 })

/** A body the API documents as valid, keys in an order where each field comes before those that depend on it. */
const validBody: fc.Arbitrary<Obj> = fc
  .record(
    {
      model: fc.constant(MODEL),
      messages: fc.array(message, { minLength: 1, maxLength: 4 }),
      max_tokens: nullable(fc.integer({ min: 1, max: 1_000_000 })),
      max_completion_tokens: nullable(fc.integer({ min: 1, max: 1_000_000 })),
      temperature: nullable(fc.double({ min: 0, max: 2, noNaN: true })),
      top_p: nullable(fc.double({ min: 0, max: 1, noNaN: true })),
      n: nullable(fc.integer({ min: 1, max: 8 })),
      stop: nullable(fc.oneof(text, fc.array(text, { maxLength: 4 }))),
      presence_penalty: nullable(fc.double({ min: -2, max: 2, noNaN: true })),
      frequency_penalty: nullable(fc.double({ min: -2, max: 2, noNaN: true })),
      logit_bias: nullable(fc.dictionary(fc.nat(200_000).map(String), fc.integer({ min: -100, max: 100 }), { maxKeys: 3 })),
      logprobs: fc.constant(true),
      top_logprobs: nullable(fc.integer({ min: 0, max: 20 })),
      seed: nullable(fc.integer()),
      tools: fc.array(functionTool, { minLength: 1, maxLength: 3 }),
      parallel_tool_calls: fc.boolean(),
      response_format: fc.oneof(
        fc.constant({ type: "text" }),
        fc.constant({ type: "json_object" }),
        fc.record({ type: fc.constant("json_schema"), json_schema: fc.record({ name: fnName, schema: fc.constant({ type: "object" }), strict: fc.boolean() }, { requiredKeys: ["name"] }) }),
      ),
      stream: fc.constantFrom(false, null),
      stream_options: fc.constant(null),
      user: text,
      reasoning_effort: nullable(fc.constantFrom("none", "minimal", "low", "medium", "high", "xhigh", "max")),
    },
    { requiredKeys: ["model", "messages"] },
  )
  // Top log probabilities are asked for with log probabilities.
  .map((body) => {
    if (body.top_logprobs === undefined) return body
    const { top_logprobs, ...rest } = body
    return { ...rest, logprobs: true, top_logprobs }
  })
  .chain((body) =>
    // A tool choice names one of the tools the body offers.
    Array.isArray(body.tools)
      ? fc
          .oneof(
            fc.constantFrom("none", "auto", "required"),
            fc.constantFrom(...(body.tools as Array<{ function: { name: string } }>).map((t) => ({ type: "function", function: { name: t.function.name } }))),
          )
          .map((tool_choice) => ({ ...body, tool_choice }))
      : fc.constant(body),
  )

const vendorFields = fc.dictionary(
  fc.constantFrom("guided_json", "guided_regex", "chat_template_kwargs", "top_k", "min_p", "repetition_penalty", "x_vendor_field"),
  fc.jsonValue(),
  { maxKeys: 4 },
)

const junk = fc.oneof(
  // Around every range the API states.
  fc.constantFrom(-101, -100, -2.5, -2, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 20, 21, 100, 101),
  fc.string({ maxLength: 6 }),
  fc.boolean(),
  fc.constant(null),
  fc.constant({}),
  fc.constant([]),
  fc.double({ noNaN: false }),
  fc.integer({ min: -1_000, max: 1_000 }),
)

/** Every path into a value's objects and arrays: where a spoiled field may be. */
const pathsIn = (value: unknown, prefix: ReadonlyArray<string | number> = []): Array<ReadonlyArray<string | number>> => {
  if (Array.isArray(value)) return value.flatMap((v, i) => [[...prefix, i], ...pathsIn(v, [...prefix, i])])
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).flatMap(([k, v]) => [[...prefix, k], ...pathsIn(v, [...prefix, k])])
  }
  return []
}

/** A valid body with a few fields anywhere in it replaced by anything at all, or removed: bodies the API may or may not take. */
const anyBody = fc
  .tuple(validBody, vendorFields, fc.array(fc.tuple(fc.nat(), fc.option(junk, { nil: undefined, freq: 4 })), { maxLength: 3 }))
  .map(([body, vendor, spoils]) => {
    let out: Obj = { ...body, ...vendor }
    for (const [pick, value] of spoils) {
      const paths = pathsIn(out)
      const path = paths[pick % paths.length]!
      out = value === undefined ? unset(out, path) : set(out, path, value)
    }
    return out
  })

const create = (body: Obj) => validateCreateBatch({ requests: [{ custom_id: "q-1", body }] }, catalog)

// ---------------------------------------------------------------------------------------------
// Single-field corruptions: where, and a value the API refuses there.

interface Spoiled {
  readonly body: Obj
  /** The field at fault, as the rejection must name it (relative to `body`). */
  readonly field: string
}

const set = (body: Obj, path: ReadonlyArray<string | number>, value: unknown): Obj => {
  const copy = structuredClone(body) as Obj
  let at: any = copy
  for (const key of path.slice(0, -1)) at = at[key]
  at[path[path.length - 1]!] = value
  return copy
}

const unset = (body: Obj, path: ReadonlyArray<string | number>): Obj => {
  const copy = structuredClone(body) as Obj
  let at: any = copy
  for (const key of path.slice(0, -1)) at = at[key]
  if (Array.isArray(at)) at.splice(Number(path[path.length - 1]), 1)
  else delete at[path[path.length - 1]!]
  return copy
}

const notNumber = fc.oneof(fc.string({ maxLength: 5 }), fc.boolean(), fc.constant({}), fc.constant([]))
const outside = (min: number, max: number) =>
  fc.oneof(fc.double({ max: min, noNaN: true }), fc.double({ min: max, noNaN: true })).filter((n) => n < min || n > max)
const notInteger = fc.oneof(notNumber, fc.double({ noNaN: true }).filter((n) => !Number.isInteger(n)))

/** For each field a valid body may hold, values the API refuses there. */
const corruptions: ReadonlyArray<readonly [string, fc.Arbitrary<unknown>]> = [
  ["model", fc.oneof(fc.integer(), fc.constant(null), fc.constant([]), fc.constant({}))],
  ["messages", fc.oneof(fc.constant([]), fc.string(), fc.constant(null), fc.constant({}))],
  ["max_tokens", fc.oneof(notInteger, fc.integer({ max: 0 }))],
  ["max_completion_tokens", fc.oneof(notInteger, fc.integer({ max: 0 }))],
  ["temperature", fc.oneof(notNumber, outside(0, 2))],
  ["top_p", fc.oneof(notNumber, outside(0, 1))],
  ["n", fc.oneof(notInteger, fc.integer({ max: 0 }))],
  ["stop", fc.oneof(fc.integer(), fc.boolean(), fc.constant({}), fc.array(text, { minLength: 5, maxLength: 7 }))],
  ["presence_penalty", fc.oneof(notNumber, outside(-2, 2))],
  ["frequency_penalty", fc.oneof(notNumber, outside(-2, 2))],
  ["logit_bias", fc.oneof(fc.string(), fc.integer(), fc.constant([]), fc.constant({ "12": 101 }), fc.constant({ word: 1 }))],
  ["logprobs", fc.oneof(fc.string(), fc.integer(), fc.constant({}))],
  ["top_logprobs", fc.oneof(notInteger, fc.integer({ min: 21 }), fc.integer({ max: -1 }))],
  ["seed", notInteger],
  ["tools", fc.oneof(fc.string(), fc.constant(null), fc.constant({}), fc.constant([{ type: "retrieval" }]))],
  ["tool_choice", fc.oneof(fc.constant("sometimes"), fc.integer(), fc.constant(null), fc.constant({ type: "function", function: { name: "not-offered-anywhere-xyz" } }))],
  ["parallel_tool_calls", fc.oneof(fc.string(), fc.integer(), fc.constant(null))],
  ["response_format", fc.oneof(fc.string(), fc.constant(null), fc.constant({ type: "xml" }), fc.constant({ type: "json_schema", json_schema: { name: "has spaces" } }))],
  ["stream", fc.oneof(fc.constant(true), fc.string(), fc.integer())],
  ["stream_options", fc.oneof(fc.constant({ include_usage: true }), fc.string(), fc.constant({}))],
  ["user", fc.oneof(fc.integer(), fc.constant(null), fc.constant({}))],
  ["reasoning_effort", fc.oneof(fc.constant("extreme"), fc.integer(), fc.constant({}))],
]

const topLevelSpoiled = validBody.chain((body) => {
  const present = corruptions.filter(([key]) => body[key] !== undefined || key === "model")
  return fc.constantFrom(...present).chain(([key, bad]) => bad.map((value): Spoiled => ({ body: { ...body, [key]: value }, field: key })))
})

/** A field inside a message, a tool or the response format spoiled. */
const nestedSpoiled = validBody.chain((body) => {
  const messages = body.messages as Array<Obj>
  const choices: Array<fc.Arbitrary<Spoiled>> = [
    fc.tuple(fc.nat(messages.length - 1), fc.oneof(fc.integer(), fc.constant("robot"), fc.constant(null))).map(([i, role]) => ({
      body: set(body, ["messages", i, "role"], role),
      field: `messages[${i}].role`,
    })),
    fc.tuple(fc.nat(messages.length - 1), fc.oneof(fc.integer(), fc.boolean(), fc.constant({}))).map(([i, content]) => ({
      body: set(body, ["messages", i, "content"], content),
      field: `messages[${i}].content`,
    })),
  ]
  const tools = body.tools as Array<Obj> | undefined
  if (tools !== undefined) {
    choices.push(
      fc.tuple(fc.nat(tools.length - 1), fc.oneof(fc.integer(), fc.constant("has spaces"), fc.constant(""), fc.constant("x".repeat(65)))).map(([t, name]) => ({
        // A tool choice may name the spoiled tool; it comes after tools, so the tool is named first.
        body: set(body, ["tools", t, "function", "name"], name),
        field: `tools[${t}].function.name`,
      })),
    )
  }
  const stop = body.stop
  if (Array.isArray(stop) && stop.length > 0) {
    choices.push(fc.tuple(fc.nat(stop.length - 1), fc.oneof(fc.integer(), fc.constant(null))).map(([j, v]) => ({ body: set(body, ["stop", j], v), field: `stop[${j}]` })))
  }
  if (body.response_format !== undefined) {
    choices.push(fc.constantFrom("xml", 7).map((type) => ({ body: set(body, ["response_format", "type"], type), field: "response_format.type" })))
  }
  return fc.oneof(...choices)
})

/** Refused, naming the field spoiled or a field inside it (`logit_bias.12` for `logit_bias`). */
const refusedNaming = (body: Obj, field: string) => {
  const result = create(body)
  if (Either.isRight(result)) return expect.fail(`accepted a body with ${field} spoiled: ${JSON.stringify(body)}`)
  const named = /^requests\[0\]\.(body\.[^ ]+)$/.exec(result.left.param ?? "")?.[1]
  const within = (path: string | undefined) =>
    path === `body.${field}` || path?.startsWith(`body.${field}.`) === true || path?.startsWith(`body.${field}[`) === true
  expect(within(named), `${result.left.param} for ${field}`).toBe(true)
  expect(result.left.message).toMatch(/^requests\[0\] \(custom_id 'q-1'\): body\.\S+ must be .+, got .+$/)
  expect(result.left.message.startsWith(`requests[0] (custom_id 'q-1'): ${named} must be `)).toBe(true)
}

describe("the chat-completion body's fields, checked as the OpenAI API documents them", () => {
  it("every body the API documents as valid is accepted, by the validator and by the independent schema alike", () => {
    fc.assert(
      fc.property(validBody, (body) => {
        expect(takenByTheAPI(body)).toBe(true)
        const result = create(body)
        if (Either.isLeft(result)) expect.fail(`${result.left.message} for ${JSON.stringify(body)}`)
      }),
      { numRuns: 500 },
    )
  })

  it("any body the validator accepts, the independent schema of the OpenAI API accepts too", () => {
    let accepted = 0
    let refused = 0
    fc.assert(
      fc.property(anyBody, (body) => {
        if (Either.isRight(create(body))) {
          accepted++
          expect(takenByTheAPI(body), JSON.stringify(body)).toBe(true)
        } else refused++
      }),
      { numRuns: 2_000 },
    )
    // Both sides are exercised, or the law says nothing.
    expect(accepted).toBeGreaterThan(200)
    expect(refused).toBeGreaterThan(200)
  })

  it("any single top-level field of a valid body spoiled is refused, naming the row and that field", () => {
    fc.assert(
      fc.property(topLevelSpoiled, ({ body, field }) => {
        // A tool choice naming a tool the body does not offer is wrong only beside the tools: no schema says so.
        const crossField = field === "tool_choice" && typeof body.tool_choice === "object" && body.tool_choice !== null
        if (!crossField) expect(takenByTheAPI(body)).toBe(false)
        refusedNaming(body, field)
      }),
      { numRuns: 2_000 },
    )
  })

  it("a spoiled field inside a message, a tool, the stop list or the response format is refused, naming its path", () => {
    fc.assert(
      fc.property(nestedSpoiled, ({ body, field }) => {
        refusedNaming(body, field)
      }),
      { numRuns: 1_000 },
    )
  })

  it("fields the API does not document pass through untouched: the stored body is the one sent", () => {
    fc.assert(
      fc.property(validBody, vendorFields, (body, vendor) => {
        const sent = { ...body, ...vendor }
        const result = create(sent)
        if (Either.isLeft(result)) return expect.fail(result.left.message)
        expect(result.right.requests[0]!.body).toBe(sent)
        expect(result.right.requests[0]!.body).toEqual(structuredClone(sent))
      }),
    )
  })

  it("a Responses-shaped row is checked after its conversion, naming the field as it was sent", () => {
    const responsesBody = fc.record(
      {
        model: fc.constant(MODEL),
        input: fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), fc.constant([{ role: "user", content: "hi" }])),
        instructions: text,
        max_output_tokens: fc.integer({ min: 1, max: 10_000 }),
        temperature: fc.double({ min: 0, max: 2, noNaN: true }),
        reasoning: fc.constant({ effort: "low" }),
        text: fc.constant({ format: { type: "json_schema", name: "answer", schema: { type: "object" } } }),
      },
      { requiredKeys: ["model", "input"] },
    )
    const spoil = fc.constantFrom(
      { set: ["max_output_tokens"], value: 0, name: "body.max_output_tokens", param: "body.max_output_tokens" },
      { set: ["temperature"], value: "hot", name: "body.temperature", param: "body.temperature" },
      { set: ["reasoning", "effort"], value: "extreme", name: "body.reasoning.effort", param: "body.reasoning.effort" },
      { set: ["text", "format", "name"], value: "has spaces", name: "body.text.format.name", param: "body.text.format.name" },
      { set: ["tools"], value: [{ type: "function", name: "has spaces" }], name: "body.tools[0].name", param: "body.tools[0].name" },
    )
    fc.assert(
      fc.property(responsesBody, spoil, (body, { set: path, value, name, param }) => {
        expect(Either.isRight(create(body))).toBe(true)
        const spoiled = set({ ...body, reasoning: { effort: "low" }, text: { format: { type: "json_schema", name: "answer", schema: { type: "object" } } } }, path, value)
        const result = create(spoiled)
        if (Either.isRight(result)) return expect.fail(`accepted ${JSON.stringify(spoiled)}`)
        expect(result.left.param).toBe(`requests[0].${param}`)
        expect(result.left.message).toContain(`requests[0] (custom_id 'q-1'): ${name}`)
      }),
    )
  })
})
