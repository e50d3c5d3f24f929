import fc from "fast-check"
import { CreateMessage as M } from "../../../src/domain/batch/createMessages.js"
import { ResponsesMessage as R } from "../../../src/domain/batch/responsesBody.js"
import type { ModelAccess } from "../../../src/domain/batch/validateCreate.js"

export const catalogModels = ["glm-5.3-flash", "qwen3.6-35b", "llama-4-scout"] as const

export const catalog: ModelAccess = {
  isAvailable: (model) => (catalogModels as ReadonlyArray<string>).includes(model),
}

type Obj = Record<string, unknown>

export const chatMessage = fc.record({
  role: fc.constantFrom("system", "user", "assistant"),
  content: fc.string({ maxLength: 40 }),
})

export const chatBody: fc.Arbitrary<Obj> = fc.record(
  {
    model: fc.constantFrom(...catalogModels),
    messages: fc.array(chatMessage, { minLength: 1, maxLength: 4 }),
    max_tokens: fc.integer({ min: 1, max: 4096 }),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    stream: fc.constant(false),
  },
  { requiredKeys: ["model", "messages"] },
)

export const customId = fc.string({ minLength: 1, maxLength: 24 })

export const batchRequest = (id: fc.Arbitrary<string> = customId): fc.Arbitrary<Obj> =>
  fc.record(
    {
      custom_id: id,
      method: fc.constant("POST"),
      url: fc.constant("/v1/chat/completions"),
      body: chatBody,
    },
    { requiredKeys: ["custom_id", "body"] },
  )

export const metadata = fc.dictionary(fc.string({ maxLength: 64 }), fc.string({ maxLength: 512 }), { maxKeys: 16 })

export const validBatch = (maxRequests = 20): fc.Arbitrary<{ requests: Array<Obj> } & Obj> =>
  fc.record(
    {
      requests: fc.uniqueArray(batchRequest(), {
        minLength: 1,
        maxLength: maxRequests,
        selector: (r) => r["custom_id"],
      }),
      metadata: fc.option(metadata, { nil: null }),
      completion_window: fc.anything(),
    },
    { requiredKeys: ["requests"] },
  )

/** One way of spoiling a single row, with the detail and param the rejection must carry. */
export interface Corruption {
  readonly name: string
  readonly apply: (row: Obj) => unknown
  /** Whether the rejection may still quote the row's custom_id. */
  readonly keepsCustomId: boolean
  readonly param: string
  readonly detail: string
}

const withBody = (row: Obj, patch: Obj): Obj => ({ ...row, body: { ...(row["body"] as Obj), ...patch } })
const without = (o: Obj, key: string): Obj => {
  const { [key]: _, ...rest } = o
  return rest
}

export const corruptions: ReadonlyArray<Corruption> = [
  { name: "row is not an object", apply: () => ["not", "a", "row"], keepsCustomId: false, param: "", detail: M.requestNotAnObject },
  { name: "row is null", apply: () => null, keepsCustomId: false, param: "", detail: M.requestNotAnObject },
  { name: "custom_id missing", apply: (r) => without(r, "custom_id"), keepsCustomId: false, param: ".custom_id", detail: M.customIdMissing },
  { name: "custom_id a number", apply: (r) => ({ ...r, custom_id: 7 }), keepsCustomId: false, param: ".custom_id", detail: M.customIdNotAString },
  { name: "custom_id empty", apply: (r) => ({ ...r, custom_id: "" }), keepsCustomId: false, param: ".custom_id", detail: M.customIdEmpty },
  { name: "custom_id too long", apply: (r) => ({ ...r, custom_id: "x".repeat(513) }), keepsCustomId: false, param: ".custom_id", detail: M.customIdTooLong(513, 512) },
  { name: "method GET", apply: (r) => ({ ...r, method: "GET" }), keepsCustomId: true, param: ".method", detail: M.methodNotPost },
  { name: "method null", apply: (r) => ({ ...r, method: null }), keepsCustomId: true, param: ".method", detail: M.methodNotPost },
  { name: "url unknown", apply: (r) => ({ ...r, url: "/v1/completions" }), keepsCustomId: true, param: ".url", detail: M.urlUnknown },
  { name: "body missing", apply: (r) => without(r, "body"), keepsCustomId: true, param: ".body", detail: M.bodyNotAnObject },
  { name: "body an array", apply: (r) => ({ ...r, body: [] }), keepsCustomId: true, param: ".body", detail: M.bodyNotAnObject },
  { name: "model missing", apply: (r) => ({ ...r, body: without(r["body"] as Obj, "model") }), keepsCustomId: true, param: ".body.model", detail: M.modelNotAString("nothing") },
  { name: "model a number", apply: (r) => withBody(r, { model: 3 }), keepsCustomId: true, param: ".body.model", detail: M.modelNotAString("3") },
  { name: "model auto", apply: (r) => withBody(r, { model: "auto" }), keepsCustomId: true, param: ".body.model", detail: M.autoModel("auto") },
  { name: "model auto-tier", apply: (r) => withBody(r, { model: "auto-fast" }), keepsCustomId: true, param: ".body.model", detail: M.autoModel("auto-fast") },
  { name: "model unknown", apply: (r) => withBody(r, { model: "no-such-model" }), keepsCustomId: true, param: ".body.model", detail: M.modelNotFound("no-such-model") },
  { name: "messages missing", apply: (r) => ({ ...r, body: without(r["body"] as Obj, "messages") }), keepsCustomId: true, param: ".body", detail: R.noMessagesNorInput },
  { name: "background requested", apply: (r) => withBody(r, { background: true }), keepsCustomId: true, param: ".body.background", detail: R.background },
  { name: "messages and input", apply: (r) => withBody(r, { input: "hi" }), keepsCustomId: true, param: ".body.input", detail: R.messagesAndInput },
  { name: "input empty", apply: (r) => ({ ...r, body: { ...without(r["body"] as Obj, "messages"), input: [] } }), keepsCustomId: true, param: ".body.input", detail: R.inputNotTextOrList },
  { name: "messages empty", apply: (r) => withBody(r, { messages: [] }), keepsCustomId: true, param: ".body.messages", detail: "body.messages must be a non-empty array of messages, got an array" },
  { name: "messages a string", apply: (r) => withBody(r, { messages: "hi" }), keepsCustomId: true, param: ".body.messages", detail: 'body.messages must be a non-empty array of messages, got "hi"' },
  { name: "message without role", apply: (r) => withBody(r, { messages: [{ content: "hi" }] }), keepsCustomId: true, param: ".body.messages[0].role", detail: "body.messages[0].role must be one of system, developer, user, assistant, tool, function, got nothing" },
  { name: "message a string", apply: (r) => withBody(r, { messages: [{ role: "user", content: "x" }, "hi"] }), keepsCustomId: true, param: ".body.messages[1]", detail: 'body.messages[1] must be a message object with a role, got "hi"' },
  { name: "stream true", apply: (r) => withBody(r, { stream: true }), keepsCustomId: true, param: ".body.stream", detail: "body.stream must be false or absent: batch requests cannot stream, got true" },
  { name: "temperature out of range", apply: (r) => withBody(r, { temperature: "hot" }), keepsCustomId: true, param: ".body.temperature", detail: 'body.temperature must be a number from 0 to 2, got "hot"' },
]

export const corruption = fc.constantFrom(...corruptions)
