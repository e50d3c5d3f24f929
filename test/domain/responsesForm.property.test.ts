import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { BodyRejection } from "../../src/domain/response/chatForm.js"
import { toResponsesForm } from "../../src/domain/response/responsesForm.js"
import { validateResponseRequest } from "../../src/domain/response/validateRequest.js"

/*
 * `stream submit` sends a chat-shaped line as a Responses request: POST /v1/responses takes it, and the
 * chat body it sends upstream is the line's own. Responses items cannot hold one assistant turn that
 * both says something and calls tools, nor two tool-calling turns in a row: those are the exceptions.
 */

const MODEL = "m"
const isAvailable = (model: string) => model === MODEL

const text = fc.string({ minLength: 1, maxLength: 8 })
const toolCall = fc.record({
  id: fc.stringMatching(/^call_[a-z0-9]{1,6}$/),
  type: fc.constant("function"),
  function: fc.record({ name: fc.constantFrom("f", "lookup"), arguments: fc.constantFrom("{}", '{"q":"x"}') }),
})
const message = fc.oneof(
  fc.record({ role: fc.constantFrom("user", "system", "developer"), content: text }),
  fc.record({
    role: fc.constant("user"),
    content: fc.array(
      fc.oneof(
        fc.record({ type: fc.constant("text"), text }),
        fc.record({ type: fc.constant("image_url"), image_url: fc.record({ url: fc.constant("https://x/y.png") }) }),
        fc.record({ type: fc.constant("image_url"), image_url: fc.record({ url: fc.constant("https://x/z.png"), detail: fc.constantFrom("low", "high") }) }),
      ),
      { minLength: 1, maxLength: 3 },
    ),
  }),
  fc.record({ role: fc.constant("developer"), content: fc.array(fc.record({ type: fc.constant("text"), text }), { minLength: 1, maxLength: 2 }) }),
  fc.record({ role: fc.constant("assistant"), content: fc.oneof(text, fc.array(fc.record({ type: fc.constant("text"), text }), { minLength: 1, maxLength: 2 })) }),
  fc.record({ role: fc.constant("assistant"), content: fc.constant(null), tool_calls: fc.array(toolCall, { minLength: 1, maxLength: 2 }) }),
  fc.record({ role: fc.constant("tool"), tool_call_id: fc.constant("call_1"), content: text }),
)
const fields = fc.record(
  {
    max_tokens: fc.integer({ min: 1, max: 100 }),
    max_completion_tokens: fc.integer({ min: 1, max: 100 }),
    temperature: fc.constantFrom(0, 0.7, 2),
    top_p: fc.constantFrom(0.5, 1),
    seed: fc.constant(7),
    reasoning_effort: fc.constantFrom("low", "high"),
    response_format: fc.constantFrom<object>(
      { type: "text" },
      { type: "json_object" },
      { type: "json_schema", json_schema: { name: "answer", schema: { type: "object" }, strict: true } },
    ),
    tools: fc.constant([{ type: "function", function: { name: "f", description: "finds", parameters: { type: "object" } } }]),
    guided_json: fc.constant({ type: "object" }),
  },
  { requiredKeys: [] },
)
const chatBody = fc
  .tuple(fc.array(message, { minLength: 1, maxLength: 6 }), fields, fc.constantFrom<unknown>(undefined, "auto", { type: "function", function: { name: "f" } }))
  .map(([messages, rest, choice]) => ({
    model: MODEL,
    messages,
    ...rest,
    ...(choice !== undefined && rest.tools !== undefined ? { tool_choice: choice } : {}),
  }))

type Message = { role: string; content?: unknown; tool_calls?: Array<unknown> }
const callsOnly = (m: Message | undefined) => m !== undefined && m.role === "assistant" && m.content === null && Array.isArray(m.tool_calls)

/** The chat body the upstream is sent: tool-calling turns in a row as one, max tokens under its chat name, a text format as none. */
const expected = (body: Record<string, unknown>) => {
  const messages: Array<Message> = []
  for (const m of body["messages"] as Array<Message>) {
    const previous = messages[messages.length - 1]
    if (callsOnly(m) && callsOnly(previous)) messages[messages.length - 1] = { ...previous!, tool_calls: [...previous!.tool_calls!, ...m.tool_calls!] }
    else messages.push(m)
  }
  const { max_completion_tokens, max_tokens, response_format, ...rest } = body
  const maxTokens = max_completion_tokens ?? max_tokens
  return {
    ...rest,
    messages,
    ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }),
    ...(response_format === undefined || (response_format as { type: string }).type === "text" ? {} : { response_format }),
  }
}

describe("a chat-shaped line as a Responses request", () => {
  it("POST /v1/responses accepts it and sends upstream the line's own chat body", () => {
    fc.assert(
      fc.property(chatBody, (body) => {
        const request = toResponsesForm(body)
        if (request instanceof BodyRejection) return expect.fail(`refused ${JSON.stringify(body)}: ${request.detail}`)
        expect(request["messages"]).toBeUndefined()
        const valid = validateResponseRequest(request, isAvailable)
        if (Either.isLeft(valid)) return expect.fail(`${JSON.stringify(request)} refused: ${valid.left.message}`)
        expect(valid.right.chat).toEqual(expected(body))
      }),
      { numRuns: 1_000 },
    )
  })

  it("a function tool and a tool choice take their Responses form, which the Response echoes", () => {
    const request = toResponsesForm({
      model: MODEL,
      messages: [{ role: "user", content: "hi" }],
      tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }],
      tool_choice: { type: "function", function: { name: "f" } },
    })
    expect(request).toEqual({
      model: MODEL,
      input: [{ role: "user", content: "hi" }],
      tools: [{ type: "function", name: "f", parameters: { type: "object" } }],
      tool_choice: { type: "function", name: "f" },
    })
  })

  it("an assistant turn that both answers and calls a tool becomes two turns", () => {
    const call = { id: "call_1", type: "function", function: { name: "f", arguments: "{}" } }
    const request = toResponsesForm({ model: MODEL, messages: [{ role: "user", content: "q" }, { role: "assistant", content: "let me look", tool_calls: [call] }] })
    expect(request).toEqual({
      model: MODEL,
      input: [
        { role: "user", content: "q" },
        { role: "assistant", content: "let me look" },
        { type: "function_call", call_id: "call_1", name: "f", arguments: "{}" },
      ],
    })
  })

  it("a Responses-shaped body, or one without messages, is sent as it is", () => {
    const responses = { model: MODEL, input: "hi", instructions: "be brief" }
    expect(toResponsesForm(responses)).toBe(responses)
    const neither = { model: MODEL }
    expect(toResponsesForm(neither)).toBe(neither)
  })

  it("what a Responses request cannot carry is refused, naming the message and field", () => {
    const refused = (messages: unknown, extra: object = {}) => {
      const result = toResponsesForm({ model: MODEL, messages, ...extra })
      if (!(result instanceof BodyRejection)) return expect.fail(`converted ${JSON.stringify(messages)}`)
      return [result.param, result.detail]
    }
    expect(refused([])).toEqual([".messages", "messages must be a non-empty list of messages"])
    expect(refused([{ role: "user", content: "a" }, { role: "function", content: "b" }])).toEqual([
      ".messages[1].role",
      "messages[1].role must be one of user, system, developer, assistant, tool",
    ])
    expect(refused([{ role: "user", content: "a", name: "ann" }])).toEqual([
      ".messages[0].name",
      "messages[0].name cannot be carried by a Responses request: its input items have role and content only",
    ])
    expect(refused([{ role: "user", content: [{ type: "input_audio", input_audio: {} }] }])).toEqual([
      ".messages[0].content[0]",
      "messages[0].content[0] must be a text part or an image_url part: a Responses request carries no other (got 'input_audio')",
    ])
    expect(refused([{ role: "tool", content: "x" }])[0]).toBe(".messages[0].tool_call_id")
    expect(refused([{ role: "assistant", content: null }])[0]).toBe(".messages[0]")
    expect(refused([{ role: "assistant", content: null, tool_calls: [{ id: "c", function: { name: "f" } }] }])[0]).toBe(".messages[0].tool_calls[0]")
    expect(refused([{ role: "user", content: "a" }], { response_format: { type: "yaml" } })[0]).toBe(".response_format")
  })
})
