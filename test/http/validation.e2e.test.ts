import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type Answer, chatRow, client } from "../support/client.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"
import { json, startScriptedServer } from "../support/scriptedServer.js"
import { type Sluice, startSluice, type TestClockControls } from "../support/sluice.js"

/*
 * Validation as deep as the upstream's, through the public HTTP API: a create whose row sets a
 * documented field wrong is refused naming the row and the field, before anything is stored, and so
 * is such a Responses-shaped row and such a chat request; fields the API does not document reach the
 * model untouched. The upstream is a recording server, so what it received can be compared.
 */

const MODEL = "vllm-model"
const completion = {
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: MODEL,
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
}

const vendor = {
  guided_json: { type: "object", properties: { answer: { type: "string" } } },
  chat_template_kwargs: { enable_thinking: false },
  top_k: 20,
  repetition_penalty: 1.05,
}

describe.each([
  { name: "the embedded log", nats: false },
  { name: "NATS JetStream", nats: true },
] as const)("deep validation, on $name", ({ nats: onNats }) => {
  let nats: NatsServer | undefined
  let upstream: Awaited<ReturnType<typeof startScriptedServer>>
  let sluice: Sluice & TestClockControls
  let api: ReturnType<typeof client>

  beforeAll(async () => {
    if (onNats) nats = await startNatsServer()
    upstream = await startScriptedServer([json(200, completion)])
    sluice = await startSluice({
      ...(nats === undefined ? {} : { natsUrl: nats.url }),
      models: [{ id: MODEL, upstream_url: `${upstream.url}/v1`, batch_concurrency: 2 }],
      testClock: {},
    })
    api = client(sluice.url)
  })
  afterEach(() => {
    upstream.seen.length = 0
  })
  afterAll(async () => {
    await sluice?.stop()
    sluice?.cleanup()
    await upstream?.close()
    await nats?.stop()
  })

  const rows = (bad: object) => [0, 1, 2].map((i) => chatRow(`q-${i + 1}`, `row ${i}`, MODEL)).concat([{ custom_id: "q-4", body: bad } as never])

  const refused = async (body: object, message: string, param: string) => {
    const before = await api.call("GET", "/v1/batches?limit=100")
    const answer: Answer = await api.call("POST", "/v1/batches", body)
    expect(answer.status, answer.text).toBe(400)
    expect(answer.body.error).toEqual({ message, type: "invalid_request_error", param, code: null })
    expect((await api.call("GET", "/v1/batches?limit=100")).body).toEqual(before.body)
  }

  it("a row with a documented field set wrong refuses the batch, naming the row and the field, and stores nothing", async () => {
    const chat = (extra: object) => ({ model: MODEL, messages: [{ role: "user", content: "hi" }], ...extra })
    await refused(
      { requests: rows(chat({ temperature: "hot" })) },
      `requests[3] (custom_id 'q-4'): body.temperature must be a number from 0 to 2, got "hot"`,
      "requests[3].body.temperature",
    )
    await refused(
      { requests: rows(chat({ max_tokens: 0 })) },
      "requests[3] (custom_id 'q-4'): body.max_tokens must be an integer of at least 1, got 0",
      "requests[3].body.max_tokens",
    )
    await refused(
      { requests: rows({ model: MODEL, messages: [{ role: "user", content: 42 }] }) },
      "requests[3] (custom_id 'q-4'): body.messages[0].content must be a string or an array of content parts (text, image_url, input_audio, file), got 42",
      "requests[3].body.messages[0].content",
    )
    await refused(
      { requests: rows(chat({ stop: ["a", "b", "c", "d", "e"] })) },
      "requests[3] (custom_id 'q-4'): body.stop must be a string or an array of up to 4 strings, got an array",
      "requests[3].body.stop",
    )
    await refused(
      { requests: rows(chat({ response_format: { type: "json_schema", json_schema: { schema: {} } } })) },
      "requests[3] (custom_id 'q-4'): body.response_format.json_schema.name must be a name of 1 to 64 letters, digits, _ or -, got nothing",
      "requests[3].body.response_format.json_schema.name",
    )
    await refused(
      { requests: rows(chat({ tool_choice: { type: "function", function: { name: "lookup" } } })) },
      "requests[3] (custom_id 'q-4'): body.tool_choice must be none unless tools offers tools, got an object",
      "requests[3].body.tool_choice",
    )
  })

  it("a Responses-shaped row is checked after its conversion, naming the field as it was sent", async () => {
    await refused(
      { requests: rows({ model: MODEL, input: "hi", max_output_tokens: -5 }) },
      "requests[3] (custom_id 'q-4'): body.max_output_tokens must be an integer of at least 1, got -5",
      "requests[3].body.max_output_tokens",
    )
    await refused(
      { requests: rows({ model: MODEL, input: "hi", reasoning: { effort: "extreme" } }) },
      `requests[3] (custom_id 'q-4'): body.reasoning.effort must be one of none, minimal, low, medium, high, xhigh, max, got "extreme"`,
      "requests[3].body.reasoning.effort",
    )
  })

  it("vendor extension fields reach the model untouched, from a batch row and from a chat request", async () => {
    const body = { model: MODEL, messages: [{ role: "user", content: "extract" }], temperature: 0.2, ...vendor }
    const created = await api.call("POST", "/v1/batches", { requests: [{ custom_id: "v-1", body }] })
    expect(created.status, created.text).toBe(200)
    expect((await api.waitFinal(created.body.id)).status).toBe("completed")
    const interactive = await api.call("POST", "/v1/chat/completions", body)
    expect(interactive.status, interactive.text).toBe(200)
    expect(upstream.seen.map((r) => JSON.parse(r.body))).toEqual([body, body])
  })

  it("POST /v1/chat/completions refuses a documented field set wrong with 400 naming it, before anything reaches the model", async () => {
    const answer = await api.call("POST", "/v1/chat/completions", {
      model: MODEL,
      messages: [{ role: "user", content: "hi" }],
      top_p: 1.5,
    })
    expect(answer.status).toBe(400)
    expect(answer.body.error).toEqual({
      message: "top_p must be a number from 0 to 1, got 1.5",
      type: "invalid_request_error",
      param: "top_p",
      code: null,
    })
    const noStream = await api.call("POST", "/v1/chat/completions", {
      model: MODEL,
      messages: [{ role: "user", content: "hi" }],
      stream_options: { include_usage: true },
    })
    expect(noStream.body.error.message).toBe("stream_options must be null unless stream is true, got an object")
    expect(upstream.seen).toEqual([])
  })
})
