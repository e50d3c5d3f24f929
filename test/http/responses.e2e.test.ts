import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { nextUtcMidnight } from "../../src/domain/account/utcDay.js"
import { simDirective } from "../../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { client } from "../support/client.js"
import { type InProcessSluice, startInProcessSluice } from "../support/inProcessSluice.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"
import { BOOTSTRAP_KEY } from "../support/sluice.js"
import { waitFor } from "../support/waitFor.js"

/*
 * POST /v1/responses through the public HTTP API, driven by OpenAI's own client and by plain fetch:
 * a Responses request becomes a chat completion on the interactive path (the account's slots, the
 * quota) and its answer a Response object. The simulator answers text; a small upstream of the test's
 * own answers what the simulator cannot (tool calls, reasoning, a content filter, errors) and records
 * what it was sent.
 */

const MODEL = "glm-5.3-flash"
const SCRIPTED = "scripted"
const PRICED = "priced"

const completion = (message: object, finishReason = "stop", usage: object = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }) => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: "upstream-name",
  choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finishReason }],
  usage,
})

/** What the scripted upstream answers, by the text of the request's last message. */
const scripts: Record<string, { status: number; body: unknown }> = {
  "call a tool": {
    status: 200,
    body: completion(
      {
        content: null,
        tool_calls: [
          { id: "call_paris", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } },
          { id: "call_rome", type: "function", function: { name: "weather", arguments: '{"city":"Rome"}' } },
        ],
      },
      "tool_calls",
    ),
  },
  "think first": {
    status: 200,
    body: completion({ content: "42", reasoning_content: "Six times seven." }, "stop", {
      prompt_tokens: 20,
      completion_tokens: 30,
      total_tokens: 50,
      prompt_tokens_details: { cached_tokens: 16 },
      completion_tokens_details: { reasoning_tokens: 25 },
    }),
  },
  "think, the newer way": { status: 200, body: completion({ content: "yes", reasoning: "It follows." }) },
  "filtered": { status: 200, body: completion({ content: "I was cut" }, "content_filter") },
  "too long": {
    status: 400,
    body: { object: "error", message: "This model's maximum context length is 4096 tokens", type: "BadRequestError", code: 400 },
  },
  "not a completion": { status: 200, body: { hello: "world" } },
}

const lastText = (body: any): string => {
  const content = body.messages[body.messages.length - 1].content
  return typeof content === "string" ? content : content.map((p: { text: string }) => p.text).join("")
}

const startScripted = async () => {
  const seen: Array<any> = []
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString())
      seen.push(body)
      const script = scripts[lastText(body)] ?? { status: 500, body: { error: { message: "no script" } } }
      res.writeHead(script.status, { "content-type": "application/json" }).end(JSON.stringify(script.body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

const post = (baseUrl: string, body: unknown, init: { key?: string | null; signal?: AbortSignal } = {}) =>
  fetch(`${baseUrl}/v1/responses`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(init.key === null ? {} : { authorization: `Bearer ${init.key ?? BOOTSTRAP_KEY}` }),
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...(init.signal === undefined ? {} : { signal: init.signal }),
  })

/** The simulator's own answer to the chat body a Response request converts to. */
const direct = async (sim: Simulator, body: object) =>
  (await (await fetch(`${sim.url}/chat/completions`, { method: "POST", body: JSON.stringify({ model: MODEL, ...body }) })).json()) as any

describe.each([
  { log: "the embedded log", nats: false },
  { log: "NATS JetStream", nats: true },
] as const)("POST /v1/responses, on $log", ({ nats: onNats }) => {
  let nats: NatsServer | undefined
  let sim: Simulator
  let scripted: Awaited<ReturnType<typeof startScripted>>
  let sluice: InProcessSluice
  let openai: OpenAI

  beforeAll(async () => {
    if (onNats) nats = await startNatsServer()
    sim = await startSimulator()
    scripted = await startScripted()
    sluice = await startInProcessSluice({
      ...(nats === undefined ? {} : { natsUrl: nats.url }),
      models: [
        { id: MODEL, upstream_url: sim.url },
        { id: SCRIPTED, upstream_url: scripted.url, upstream_model: "upstream-name" },
        { id: PRICED, upstream_url: sim.url, upstream_model: MODEL, input_usd_per_mtok: 1, output_usd_per_mtok: 1 },
      ],
    })
    openai = new OpenAI({ apiKey: BOOTSTRAP_KEY, baseURL: `${sluice.url}/v1`, maxRetries: 0 })
  })
  afterAll(async () => {
    await sluice?.stop()
    await sim?.close()
    await scripted?.close()
    await nats?.stop()
  })

  const newKey = async (id: string, settings: object) => {
    const api = client(sluice.url)
    expect((await api.admin("POST", "/admin/v1/accounts", { id, ...settings })).status).toBe(200)
    return (await api.admin("POST", `/admin/v1/accounts/${id}/keys`, {})).body.key as string
  }

  it("openai's responses.create gets a completed Response: the model's answer as output_text, its usage, the request's settings", async () => {
    const expected = await direct(sim, {
      messages: [
        { role: "system", content: "Answer in one word." },
        { role: "user", content: "Name a prime number." },
      ],
      temperature: 0.5,
    })
    const response = await openai.responses.create({
      model: MODEL,
      input: "Name a prime number.",
      instructions: "Answer in one word.",
      temperature: 0.5,
      metadata: { project: "eval-42" },
      service_tier: "auto",
    })
    const now = Math.floor((await sluice.now()) / 1000)
    expect(response.id).toMatch(/^resp_[0-9a-f]{32}$/)
    expect(response).toMatchObject({
      object: "response",
      created_at: now,
      completed_at: now,
      status: "completed",
      background: false,
      model: MODEL,
      error: null,
      incomplete_details: null,
      instructions: "Answer in one word.",
      temperature: 0.5,
      top_p: null,
      tools: [],
      tool_choice: "auto",
      metadata: { project: "eval-42" },
      service_tier: "default",
      usage: {
        input_tokens: expected.usage.prompt_tokens,
        input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
        output_tokens: expected.usage.completion_tokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: expected.usage.prompt_tokens + expected.usage.completion_tokens,
      },
    })
    expect(response.output_text).toBe(expected.choices[0].message.content)
    expect(response.output).toHaveLength(1)
    const [message] = response.output
    expect(message).toEqual({
      type: "message",
      id: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text: expected.choices[0].message.content, annotations: [] }],
    })
  })

  it("plain fetch: input items with content parts, answered 200 as JSON; each response has its own id", async () => {
    const body = {
      model: MODEL,
      input: [
        { role: "user", content: [{ type: "input_text", text: "first question" }] },
        { role: "assistant", content: [{ type: "output_text", text: "an answer" }] },
        { type: "message", role: "user", content: "Summarize this." },
      ],
    }
    const first = await post(sluice.url, body)
    expect(first.status).toBe(200)
    expect(first.headers.get("content-type")).toMatch(/^application\/json/)
    const a = (await first.json()) as any
    const b = (await (await post(sluice.url, body)).json()) as any
    expect(a.status).toBe("completed")
    expect(a.output[0].content[0].text).toBe("Simulated answer to: Summarize this.")
    expect(a.metadata).toEqual({})
    expect(b.id).not.toBe(a.id)
    expect(b.output[0].id).not.toBe(a.output[0].id)
  })

  it("an answer stopped on max_output_tokens is incomplete, with incomplete_details and the text it had", async () => {
    const input = `Write at length ${simDirective.tokens(50)}`
    const expected = await direct(sim, { messages: [{ role: "user", content: input }], max_tokens: 3 })
    expect(expected.choices[0].finish_reason).toBe("length")
    const response = await openai.responses.create({ model: MODEL, input, max_output_tokens: 3 })
    expect(response.status).toBe("incomplete")
    expect(response.incomplete_details).toEqual({ reason: "max_output_tokens" })
    expect(response.completed_at).toBeNull()
    expect(response.max_output_tokens).toBe(3)
    expect(response.usage?.output_tokens).toBe(3)
    expect(response.output).toMatchObject([{ type: "message", status: "incomplete" }])
    expect(response.output_text).toBe(expected.choices[0].message.content)
  })

  it("tool calls become function_call items; the upstream is sent chat-form tools under its own model name", async () => {
    const tools = [{ type: "function" as const, name: "weather", parameters: { type: "object", properties: { city: { type: "string" } } }, strict: false }]
    const response = await openai.responses.create({ model: SCRIPTED, input: "call a tool", tools, tool_choice: { type: "function", name: "weather" } })
    expect(response.status).toBe("completed")
    expect(response.output).toEqual([
      { type: "function_call", id: expect.stringMatching(/^fc_/), call_id: "call_paris", name: "weather", arguments: '{"city":"Paris"}', status: "completed" },
      { type: "function_call", id: expect.stringMatching(/^fc_/), call_id: "call_rome", name: "weather", arguments: '{"city":"Rome"}', status: "completed" },
    ])
    expect(response.output_text).toBe("")
    expect(response.tools).toEqual(tools)
    expect(response.tool_choice).toEqual({ type: "function", name: "weather" })
    const sent = scripted.seen[scripted.seen.length - 1]
    expect(sent).toEqual({
      model: "upstream-name",
      messages: [{ role: "user", content: "call a tool" }],
      tools: [{ type: "function", function: { name: "weather", parameters: tools[0]!.parameters, strict: false } }],
      tool_choice: { type: "function", function: { name: "weather" } },
    })
  })

  it("the upstream's reasoning is a reasoning item before the message, with its token details; either field name", async () => {
    const response = await openai.responses.create({ model: SCRIPTED, input: "think first" })
    expect(response.output).toEqual([
      { type: "reasoning", id: expect.stringMatching(/^rs_/), summary: [{ type: "summary_text", text: "Six times seven." }] },
      expect.objectContaining({ type: "message", content: [{ type: "output_text", text: "42", annotations: [] }] }),
    ])
    expect(response.usage).toEqual({
      input_tokens: 20,
      input_tokens_details: { cached_tokens: 16, cache_write_tokens: 0 },
      output_tokens: 30,
      output_tokens_details: { reasoning_tokens: 25 },
      total_tokens: 50,
    })
    const newer = await openai.responses.create({ model: SCRIPTED, input: "think, the newer way" })
    expect(newer.output.map((item) => item.type)).toEqual(["reasoning", "message"])
    expect(newer.output[0]).toMatchObject({ summary: [{ type: "summary_text", text: "It follows." }] })
  })

  it("a content filter's stop is incomplete too", async () => {
    const response = await openai.responses.create({ model: SCRIPTED, input: "filtered" })
    expect(response).toMatchObject({ status: "incomplete", incomplete_details: { reason: "content_filter" }, output_text: "I was cut" })
  })

  it("an upstream error, a broken answer or none at all is a failed Response, answered 200, that the client takes as one", async () => {
    const failures: Array<[string, string, string, RegExp]> = [
      [MODEL, `break ${simDirective.status(500)}`, "server_error", /^The model server answered 500: .+/],
      [MODEL, `busy ${simDirective.status(429)}`, "rate_limit_exceeded", /^The model server answered 429: .+/],
      [SCRIPTED, "too long", "invalid_prompt", /^The model server answered 400: This model's maximum context length is 4096 tokens$/],
      [SCRIPTED, "not a completion", "server_error", /^The model server answered 200 with a body that is not a chat completion$/],
      [MODEL, `cut ${simDirective.reset}`, "server_error", /^The model server could not be reached: .+/],
    ]
    for (const [model, input, code, message] of failures) {
      const response = await openai.responses.create({ model, input })
      expect(response.status, input).toBe("failed")
      expect(response.error?.code).toBe(code)
      expect(response.error?.message).toMatch(message)
      expect(response.output).toEqual([])
      expect(response).not.toHaveProperty("usage")
      expect(response.completed_at).toBeNull()
    }
  })

  it("a body refused as a Responses-shaped batch row is refused here with the same message, its fields named from the request", async () => {
    const api = client(sluice.url)
    const cases: Array<{ body: object; row: string; rowParam: string; message: string; param: string }> = [
      {
        body: { model: MODEL, input: "" },
        row: "'body.input' must be a non-empty string or a non-empty list of input items",
        rowParam: "body.input",
        message: "'input' must be a non-empty string or a non-empty list of input items",
        param: "input",
      },
      {
        body: { model: MODEL, input: [{ role: "robot", content: "a" }] },
        row: "'body.input[0].role' must be one of user, assistant, system, developer",
        rowParam: "body.input[0].role",
        message: "'input[0].role' must be one of user, assistant, system, developer",
        param: "input[0].role",
      },
      {
        body: { model: MODEL, input: [{ role: "user", content: [{ type: "input_audio" }] }] },
        row: "'body.input[0].content[0]' must be an input_text, output_text or input_image part",
        rowParam: "body.input[0].content[0]",
        message: "'input[0].content[0]' must be an input_text, output_text or input_image part",
        param: "input[0].content[0]",
      },
      {
        body: { model: MODEL, input: [{ type: "function_call", call_id: "c", name: "f" }] },
        row: "'body.input[0]' function_call needs string 'call_id', 'name' and 'arguments'",
        rowParam: "body.input[0]",
        message: "'input[0]' function_call needs string 'call_id', 'name' and 'arguments'",
        param: "input[0]",
      },
      {
        body: { model: MODEL, input: "hi", instructions: 5 },
        row: "'body.instructions' must be a string",
        rowParam: "body.instructions",
        message: "'instructions' must be a string",
        param: "instructions",
      },
      {
        body: { model: MODEL, input: "hi", text: { format: { type: "yaml" } } },
        row: "'body.text.format' must be a text, json_object or json_schema format",
        rowParam: "body.text.format",
        message: "'text.format' must be a text, json_object or json_schema format",
        param: "text.format",
      },
      {
        body: { model: MODEL, input: "hi", max_output_tokens: -5 },
        row: "body.max_output_tokens must be an integer of at least 1, got -5",
        rowParam: "body.max_output_tokens",
        message: "max_output_tokens must be an integer of at least 1, got -5",
        param: "max_output_tokens",
      },
      {
        body: { model: MODEL, input: "hi", reasoning: { effort: "extreme" } },
        row: 'body.reasoning.effort must be one of none, minimal, low, medium, high, xhigh, max, got "extreme"',
        rowParam: "body.reasoning.effort",
        message: 'reasoning.effort must be one of none, minimal, low, medium, high, xhigh, max, got "extreme"',
        param: "reasoning.effort",
      },
      {
        body: { model: MODEL, input: "hi", temperature: 3 },
        row: "body.temperature must be a number from 0 to 2, got 3",
        rowParam: "body.temperature",
        message: "temperature must be a number from 0 to 2, got 3",
        param: "temperature",
      },
      {
        body: { model: MODEL, input: "hi", text: { format: { type: "json_schema", name: "has spaces" } } },
        row: 'body.text.format.name must be a name of 1 to 64 letters, digits, _ or -, got "has spaces"',
        rowParam: "body.text.format.name",
        message: 'text.format.name must be a name of 1 to 64 letters, digits, _ or -, got "has spaces"',
        param: "text.format.name",
      },
      {
        body: { model: MODEL, input: [{ role: "system", content: [{ type: "input_image", image_url: "https://x/y.png" }] }] },
        row: 'body.messages[0].content[0].type (converted from body.input) must be one of text, got "image_url"',
        rowParam: "body.input",
        message: 'messages[0].content[0].type (converted from input) must be one of text, got "image_url"',
        param: "input",
      },
      {
        body: { input: "hi" },
        row: "body.model must be a string naming a model, got nothing",
        rowParam: "body.model",
        message: "model must be a string naming a model, got nothing",
        param: "model",
      },
      // Where a batch row is named, a response is.
      {
        body: { model: MODEL, input: "hi", previous_response_id: "resp_1" },
        row: "previous_response_id is not supported in batch request bodies: every row stands alone",
        rowParam: "body.previous_response_id",
        message: "previous_response_id is not supported: Sluice keeps no conversation state, so every response stands alone",
        param: "previous_response_id",
      },
      {
        body: { model: MODEL, input: "hi", tools: [{ type: "web_search" }] },
        row: "'body.tools[0]' must be a function tool with a string 'name'; hosted tools cannot run in a batch",
        rowParam: "body.tools[0]",
        message: "'tools[0]' must be a function tool with a string 'name'; hosted tools cannot run here",
        param: "tools[0]",
      },
      {
        body: { model: MODEL, input: [{ role: "user", content: "a" }, { type: "reasoning", id: "r" }] },
        row: "'body.input[1]' is a 'reasoning' item, which a batch row cannot carry; use message, function_call or function_call_output items",
        rowParam: "body.input[1].type",
        message: "'input[1]' is a 'reasoning' item, which a response cannot carry; use message, function_call or function_call_output items",
        param: "input[1].type",
      },
      {
        body: { model: MODEL, input: "b", messages: [{ role: "user", content: "a" }] },
        row: "body must include either messages or Responses API input, not both",
        rowParam: "body.input",
        message: "The request must include either messages or Responses API input, not both",
        param: "input",
      },
    ]
    const received = sim.stats().received
    for (const { body, row, rowParam, message, param } of cases) {
      const asRow = await api.call("POST", "/v1/batches", { requests: [{ custom_id: "r-1", body }] })
      expect(asRow.status, asRow.text).toBe(400)
      expect(asRow.body.error).toEqual({ message: `requests[0] (custom_id 'r-1'): ${row}`, type: "invalid_request_error", param: `requests[0].${rowParam}`, code: null })
      const answer = await post(sluice.url, body)
      expect(answer.status).toBe(400)
      expect(((await answer.json()) as any).error).toEqual({ message, type: "invalid_request_error", param, code: null })
    }
    expect(sim.stats().received).toBe(received)
  })

  it("what only a response can ask is refused with 400 naming its field: stream, background, a stream id, an unknown tier, bad metadata", async () => {
    const ask = { model: MODEL, input: "hi" }
    const cases: Array<[unknown, string, string | null]> = [
      [
        { ...ask, stream: true },
        "stream is not supported on POST /v1/responses: send the request without stream to get the whole response, or stream a chat completion from POST /v1/chat/completions",
        "stream",
      ],
      [{ ...ask, metadata: { stream_id: "" } }, "metadata.stream_id must be a non-empty string", "metadata.stream_id"],
      [{ ...ask, background: "yes" }, 'background must be true or false, got "yes"', "background"],
      [{ ...ask, stream: "yes" }, 'stream must be true or false, got "yes"', "stream"],
      [{ ...ask, service_tier: "turbo" }, 'service_tier must be one of auto, default, flex, scale, priority, got "turbo"', "service_tier"],
      [{ ...ask, metadata: { n: 1 } }, "'metadata' value for key 'n' must be a string", "metadata.n"],
      [{ ...ask, metadata: [] }, "'metadata' must be an object of string key-value pairs", "metadata"],
      [{ model: MODEL }, "'input' must be a non-empty string or a non-empty list of input items", "input"],
      [[1, 2], "The request body must be a Responses API request object", null],
      ["{not json", "The request body is not valid JSON", null],
    ]
    const received = sim.stats().received
    for (const [body, message, param] of cases) {
      const answer = await post(sluice.url, body)
      expect(answer.status, message).toBe(400)
      expect(((await answer.json()) as any).error).toEqual({ message, type: "invalid_request_error", param, code: null })
    }
    expect(sim.stats().received).toBe(received)
  })

  it("401 without a key or with an unknown one; 404 for a model not in the catalog or not the account's", async () => {
    for (const key of [null, "sk-not-a-key"]) {
      const answer = await post(sluice.url, { model: MODEL, input: "hello" }, { key })
      expect(answer.status).toBe(401)
      expect(((await answer.json()) as any).error).toMatchObject({ type: "authentication_error", code: "invalid_api_key" })
    }
    const unknown = await post(sluice.url, { model: "no-such-model", input: "hello" })
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toEqual({
      error: { message: "Model 'no-such-model' not found", type: "invalid_request_error", param: null, code: "model_not_found" },
    })
    const key = await newKey("scripted-only", { models: [SCRIPTED] })
    const refused = await post(sluice.url, { model: MODEL, input: "hello" }, { key })
    expect(refused.status).toBe(404)
    expect(((await refused.json()) as any).error.message).toBe(`Model '${MODEL}' not found`)
    expect((await post(sluice.url, { model: SCRIPTED, input: "filtered" }, { key })).status).toBe(200)
  })

  it("a response holds one of the account's concurrent-request slots while it waits: 429 while none is free", async () => {
    const key = await newKey("one-slot", { concurrency: 1 })
    const controller = new AbortController()
    const hungBefore = sim.stats().hung
    post(sluice.url, { model: MODEL, input: `holding ${simDirective.hang}` }, { key, signal: controller.signal }).catch(() => undefined)
    await waitFor("the first request is at the simulator", () => sim.stats().hung > hungBefore)
    for (const path of ["/v1/responses", "/v1/chat/completions"]) {
      const body = path === "/v1/responses" ? { model: MODEL, input: "second" } : { model: MODEL, messages: [{ role: "user", content: "second" }] }
      const refused = await fetch(`${sluice.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      })
      expect(refused.status, path).toBe(429)
      expect(refused.headers.get("retry-after")).toBe("1")
      expect(((await refused.json()) as any).error).toMatchObject({ type: "rate_limit_error", code: "concurrency_limit_exceeded" })
    }
    controller.abort()
    await waitFor("the slot is free again", async () => (await post(sluice.url, { model: MODEL, input: "third" }, { key })).status === 200)
  })

  it("a response's cost counts toward the account's daily quota", async () => {
    const key = await newKey("metered", { daily_quota_usd: 0.000001 })
    const first = await post(sluice.url, { model: PRICED, input: "What does it cost?" }, { key })
    expect(first.status).toBe(200)
    expect(((await first.json()) as any).status).toBe("completed")
    const next = await post(sluice.url, { model: PRICED, input: "And now?" }, { key })
    expect(next.status).toBe(429)
    const now = await sluice.now()
    expect(Number(next.headers.get("retry-after"))).toBe(Math.ceil((nextUtcMidnight(now) - now) / 1000))
    expect(((await next.json()) as any).error.code).toBe("insufficient_quota")
  })

  it("a failed response costs nothing", async () => {
    const key = await newKey("metered-failures", { daily_quota_usd: 0.000001 })
    for (let i = 0; i < 2; i++) {
      const failed = await post(sluice.url, { model: PRICED, input: `fails ${simDirective.status(500)}` }, { key })
      expect(failed.status).toBe(200)
      expect(((await failed.json()) as any).status).toBe("failed")
    }
  })

  it("the endpoint is in /openapi.json with its request body, its Response and the API key", async () => {
    const spec = (await (await fetch(`${sluice.url}/openapi.json`)).json()) as any
    const operation = spec.paths["/v1/responses"].post
    expect(operation.security).toEqual([{ apiKey: [] }])
    expect(operation.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/ResponseCreateRequest" })
    expect(operation.responses["200"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Response" })
    expect(Object.keys(operation.responses).sort()).toEqual(["200", "400", "401", "403", "404", "408", "413", "429", "503"])
    expect(spec.components.schemas.Response.properties.status).toEqual({ $ref: "#/components/schemas/ResponseStatus" })
    expect(spec.components.schemas.ResponseStatus.enum).toEqual(["in_progress", "completed", "failed", "cancelled", "incomplete"])
  })
})
