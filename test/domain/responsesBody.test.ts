import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { BodyRejection, normalizeRowBody, ResponsesMessage as R } from "../../src/domain/batch/responsesBody.js"

type Obj = Record<string, unknown>

const chat = (body: Obj): Obj => {
  const out = normalizeRowBody(body)
  if (out instanceof BodyRejection) throw new Error(`expected a chat body, got ${out.detail}`)
  return out
}

const rejected = (body: Obj): BodyRejection => {
  const out = normalizeRowBody(body)
  if (!(out instanceof BodyRejection)) throw new Error(`expected a rejection, got ${JSON.stringify(out)}`)
  return out
}

const role = fc.constantFrom("user", "assistant", "system", "developer")
const text = fc.string({ maxLength: 40 })
const textPart = text.map((t) => ({ type: "input_text", text: t }))
const messageItem = fc.record(
  {
    type: fc.constant("message"),
    role,
    content: fc.oneof(text, fc.array(textPart, { maxLength: 3 })),
  },
  { requiredKeys: ["role", "content"] },
)

/** What a chat message's content should be for an item's content: parts become chat text parts. */
const expectedContent = (content: unknown) =>
  typeof content === "string" ? content : (content as Array<{ text: string }>).map((p) => ({ type: "text", text: p.text }))

describe("Responses → chat normalization laws", () => {
  it("keeps every message's role and content in order, with instructions as the first system message", () => {
    fc.assert(
      fc.property(fc.array(messageItem, { minLength: 1, maxLength: 8 }), fc.option(text, { nil: undefined }), (items, instructions) => {
        const body = chat({ model: "m", input: items, ...(instructions === undefined ? {} : { instructions }) })
        const expected = items.map((item) => ({ role: item.role, content: expectedContent(item.content) }))
        if (instructions !== undefined) expected.unshift({ role: "system", content: instructions })
        expect(body["messages"]).toEqual(expected)
        expect(body).not.toHaveProperty("input")
        expect(body).not.toHaveProperty("instructions")
      }),
    )
  })

  it("string input is one user message", () => {
    fc.assert(
      fc.property(text.filter((t) => t.length > 0), (input) => {
        expect(chat({ model: "m", input })["messages"]).toEqual([{ role: "user", content: input }])
      }),
    )
  })

  it("a chat body is returned as the same object, so normalizing twice changes nothing", () => {
    fc.assert(
      fc.property(fc.array(messageItem, { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 4096 }), (items, max) => {
        const once = chat({ model: "m", input: items, max_output_tokens: max, temperature: 0.5 })
        expect(normalizeRowBody(once)).toBe(once)
      }),
    )
  })

  it("any body it does not refuse has messages and no input", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom("input", "messages", "instructions", "background", "model", "text", "tools"), fc.anything()), (body) => {
        const out = normalizeRowBody(body)
        if (out instanceof BodyRejection) return
        expect(out["messages"]).toBeDefined()
        expect(out["input"]).toBeUndefined()
      }),
    )
  })
})

describe("Responses → chat mappings", () => {
  it("max_output_tokens, reasoning effort, text format, function tools and tool_choice map to their chat names", () => {
    const body = chat({
      model: "m",
      input: "hi",
      max_output_tokens: 64,
      temperature: 0.2,
      reasoning: { effort: "low" },
      text: { format: { type: "json_schema", name: "answer", schema: { type: "object" }, strict: true } },
      tools: [{ type: "function", name: "lookup", description: "d", parameters: { type: "object" } }],
      tool_choice: { type: "function", name: "lookup" },
      store: false,
    })
    expect(body).toEqual({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 64,
      temperature: 0.2,
      reasoning_effort: "low",
      response_format: { type: "json_schema", json_schema: { name: "answer", schema: { type: "object" }, strict: true } },
      tools: [{ type: "function", function: { name: "lookup", description: "d", parameters: { type: "object" } } }],
      tool_choice: { type: "function", function: { name: "lookup" } },
    })
  })

  it("function calls made together are one assistant turn; their outputs are tool messages", () => {
    const body = chat({
      model: "m",
      input: [
        { role: "user", content: "weather in Paris and Rome?" },
        { type: "function_call", call_id: "c1", name: "weather", arguments: '{"city":"Paris"}' },
        { type: "function_call", call_id: "c2", name: "weather", arguments: '{"city":"Rome"}' },
        { type: "function_call_output", call_id: "c1", output: "sunny" },
        { type: "function_call_output", call_id: "c2", output: "rain" },
      ],
    })
    expect(body["messages"]).toEqual([
      { role: "user", content: "weather in Paris and Rome?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c1", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } },
          { id: "c2", type: "function", function: { name: "weather", arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "sunny" },
      { role: "tool", tool_call_id: "c2", content: "rain" },
    ])
  })

  it("images become image_url parts", () => {
    const body = chat({
      model: "m",
      input: [{ role: "user", content: [{ type: "input_text", text: "what is this?" }, { type: "input_image", image_url: "https://x/y.png", detail: "low" }] }],
    })
    expect(body["messages"]).toEqual([
      { role: "user", content: [{ type: "text", text: "what is this?" }, { type: "image_url", image_url: { url: "https://x/y.png", detail: "low" } }] },
    ])
  })

  it("json_object and text formats", () => {
    expect(chat({ model: "m", input: "x", text: { format: { type: "json_object" } } })["response_format"]).toEqual({ type: "json_object" })
    expect(chat({ model: "m", input: "x", text: { format: { type: "text" } } })).not.toHaveProperty("response_format")
  })
})

describe("Responses bodies a batch refuses", () => {
  const cases: Array<[string, Obj, string, string]> = [
    ["background", { model: "m", input: "hi", background: true }, R.background, ".background"],
    ["background on a chat body", { model: "m", messages: [{ role: "user", content: "hi" }], background: true }, R.background, ".background"],
    ["neither messages nor input", { model: "m" }, R.noMessagesNorInput, ""],
    ["both messages and input", { model: "m", messages: [{ role: "user", content: "a" }], input: "b" }, R.messagesAndInput, ".input"],
    ["empty string input", { model: "m", input: "" }, R.inputNotTextOrList, ".input"],
    ["empty list input", { model: "m", input: [] }, R.inputNotTextOrList, ".input"],
    ["a number as input", { model: "m", input: 3 }, R.inputNotTextOrList, ".input"],
    ["an item that is not an object", { model: "m", input: ["hi"] }, R.inputItemNotAnObject(0), ".input[0]"],
    ["a hosted-tool item", { model: "m", input: [{ role: "user", content: "a" }, { type: "reasoning", id: "r" }] }, R.inputItemType(1, "reasoning"), ".input[1].type"],
    ["an unknown role", { model: "m", input: [{ role: "robot", content: "a" }] }, R.inputRole(0), ".input[0].role"],
    ["content neither text nor parts", { model: "m", input: [{ role: "user", content: 7 }] }, R.inputContent(0), ".input[0].content"],
    ["an unknown content part", { model: "m", input: [{ role: "user", content: [{ type: "input_audio" }] }] }, R.inputPart(0, 0), ".input[0].content[0]"],
    ["a function call without arguments", { model: "m", input: [{ type: "function_call", call_id: "c", name: "f" }] }, R.functionCall(0), ".input[0]"],
    ["previous_response_id", { model: "m", input: "hi", previous_response_id: "resp_1" }, R.stateful("previous_response_id"), ".previous_response_id"],
    ["instructions not a string", { model: "m", input: "hi", instructions: ["x"] }, R.instructions, ".instructions"],
    ["a hosted tool", { model: "m", input: "hi", tools: [{ type: "web_search" }] }, R.tool(0), ".tools[0]"],
    ["an unknown text format", { model: "m", input: "hi", text: { format: { type: "yaml" } } }, R.textFormat, ".text.format"],
  ]
  it.each(cases)("%s", (_name, body, detail, param) => {
    const out = rejected(body)
    expect(out.detail).toBe(detail)
    expect(out.param).toBe(param)
  })
})
