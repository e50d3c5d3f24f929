import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { validateCreateBatch } from "../../src/domain/batch/validateCreate.js"
import { validateResponseRequest } from "../../src/domain/response/validateRequest.js"

/*
 * `POST /v1/responses` takes a body exactly as a batch takes a Responses-shaped row: the same bodies
 * accepted, converted to the same chat body, and the same ones refused, at the same field (named from
 * the request rather than from the row).
 */

const MODEL = "m"
const isAvailable = (model: string) => model === MODEL

const okItem = fc.constantFrom<object>(
  { role: "user", content: "hi" },
  { type: "message", role: "assistant", content: [{ type: "output_text", text: "an answer" }] },
  { role: "developer", content: [{ type: "input_text", text: "be brief" }] },
  { role: "user", content: [{ type: "input_image", image_url: "https://x/y.png" }] },
  { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
  { type: "function_call_output", call_id: "c1", output: "done" },
)
const badItem = fc.constantFrom<unknown>(
  "hi",
  { role: "robot", content: "a" },
  { role: "user", content: 7 },
  { role: "user", content: [{ type: "input_audio" }] },
  { type: "function_call", call_id: "c" },
  { type: "function_call_output", call_id: "c", output: 1 },
  { type: "reasoning", id: "r" },
  { role: "system", content: [{ type: "input_image", image_url: "https://x/y.png" }] },
)
const validInput = fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.array(okItem, { minLength: 1, maxLength: 4 }))
const validFields = fc.record(
  {
    instructions: fc.constantFrom<unknown>("be brief", null),
    max_output_tokens: fc.constantFrom<unknown>(1, 64, null),
    temperature: fc.constantFrom<unknown>(0, 0.7, 2),
    top_p: fc.constantFrom<unknown>(0.5, 1),
    text: fc.constantFrom<unknown>(
      { format: { type: "json_object" } },
      { format: { type: "text" } },
      { format: { type: "json_schema", name: "answer", schema: { type: "object" } } },
    ),
    reasoning: fc.constant<unknown>({ effort: "low" }),
    tools: fc.constantFrom<unknown>([{ type: "function", name: "f", parameters: { type: "object" } }], [{ type: "function", function: { name: "f" } }]),
    previous_response_id: fc.constant<unknown>(null),
    user: fc.constant<unknown>("u"),
    seed: fc.constant<unknown>(7),
    guided_json: fc.constant<unknown>({ type: "object" }),
  },
  { requiredKeys: [] },
)
/** One field set to what a row may not carry. */
const spoil = fc.constantFrom<[string, unknown]>(
  ["model", 5],
  ["model", ""],
  ["model", undefined],
  ["input", ""],
  ["input", []],
  ["input", 3],
  ["input", { text: "x" }],
  ["instructions", 5],
  ["max_output_tokens", 0],
  ["max_output_tokens", "x"],
  ["temperature", 3],
  ["top_p", 1.5],
  ["text", { format: { type: "yaml" } }],
  ["text", { format: { type: "json_schema", name: "has spaces" } }],
  ["text", "x"],
  ["reasoning", { effort: "extreme" }],
  ["tools", [{ type: "web_search" }]],
  ["tools", [{ type: "function", name: "has spaces" }]],
  ["tools", "x"],
  ["tool_choice", { type: "function", name: "g" }],
  ["tool_choice", 5],
  ["previous_response_id", "resp_1"],
  ["user", 5],
  ["seed", 1.5],
  ["messages", [{ role: "user", content: "x" }]],
)
const badInput = fc.tuple(fc.array(okItem, { maxLength: 2 }), badItem, fc.array(okItem, { maxLength: 2 })).map(([a, bad, b]) => [...a, bad, ...b])
const body = fc
  .tuple(
    validInput,
    validFields,
    fc.oneof(fc.constant<unknown>(undefined), fc.constantFrom<unknown>("auto", "none", { type: "function", name: "f" })),
    fc.oneof({ weight: 2, arbitrary: fc.constant([]) }, fc.array(spoil, { minLength: 1, maxLength: 2 })),
    fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, badInput),
  )
  .map(([input, fields, choice, spoils, broken]) => {
    const sent: Record<string, unknown> = { model: MODEL, input: broken ?? input, ...fields }
    // A tool choice needs tools to choose from.
    if (choice !== undefined && sent["tools"] !== undefined) sent["tool_choice"] = choice
    for (const [key, value] of spoils) {
      if (value === undefined) delete sent[key]
      else sent[key] = value
    }
    return sent
  })

describe("a Responses request is taken as a Responses-shaped batch row is", () => {
  it("the same bodies are accepted and converted to the same chat body; the same refused, naming the same field", () => {
    fc.assert(
      fc.property(body, (sent) => {
        const row = validateCreateBatch({ requests: [{ custom_id: "r", body: sent }] }, { isAvailable })
        const request = validateResponseRequest(sent, isAvailable)
        if (Either.isRight(row)) {
          if (Either.isLeft(request)) return expect.fail(`refused ${JSON.stringify(sent)}: ${JSON.stringify(request.left)}`)
          expect(request.right.chat).toEqual(row.right.requests[0]!.body)
          expect(request.right.model).toBe(MODEL)
          return
        }
        if (Either.isRight(request)) return expect.fail(`accepted ${JSON.stringify(sent)}, which a row may not be: ${row.left.message}`)
        const refused = request.left
        if (refused._tag !== "Invalid") return expect.fail(`${JSON.stringify(sent)}: ${refused.message}`)
        expect(row.left.param).toBe(`requests[0].body.${refused.param}`)
      }),
      { numRuns: 2_000 },
    )
  })
})
