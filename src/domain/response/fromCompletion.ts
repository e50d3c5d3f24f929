import type { OutputItem, ResponseError, ResponseObject, ResponseUsage } from "../api/ResponseObject.js"
import { isObject, type JsonObject as Obj } from "../json.js"
import type { ResponseEcho } from "./echo.js"

/** What the model's upstream gave for one request: an answer with its status and parsed body, or none at all. */
export type UpstreamReply =
  | { readonly _tag: "Answered"; readonly status: number; readonly body: unknown }
  | { readonly _tag: "NoAnswer"; readonly message: string }

export interface ResponseContext {
  readonly id: string
  /** The public model id the caller named. */
  readonly model: string
  readonly createdAt: number
  readonly completedAt: number
  readonly serviceTier: "default" | "flex"
  readonly echo: ResponseEcho
  /** A fresh id with this prefix: `msg_…`, `fc_…`, `rs_…`, `call_…`. */
  readonly newId: (prefix: "msg" | "fc" | "rs" | "call") => string
}

const count = (value: unknown): number => (Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : 0)

const field = (value: unknown, key: string): unknown => (isObject(value) ? value[key] : undefined)

/** Chat usage in Responses terms; the total is the upstream's own, as a batch's usage sums it, else input + output. */
export const usageOf = (usage: unknown): ResponseUsage => {
  const input = count(field(usage, "prompt_tokens"))
  const output = count(field(usage, "completion_tokens"))
  const total = field(usage, "total_tokens")
  const details = field(usage, "prompt_tokens_details")
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: count(field(details, "cached_tokens")), cache_write_tokens: count(field(details, "cache_write_tokens")) },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: count(field(field(usage, "completion_tokens_details"), "reasoning_tokens")) },
    total_tokens: Number.isSafeInteger(total) && (total as number) >= 0 ? (total as number) : input + output,
  }
}

/** The message's text: its string content, or its text parts joined; a refusal stands in for no text. */
export const messageText = (message: Obj): string => {
  const content = message["content"]
  const text =
    typeof content === "string"
      ? content
      : Array.isArray(content)
        ? content.map((part) => (isObject(part) && typeof part["text"] === "string" ? part["text"] : "")).join("")
        : ""
  return text === "" && typeof message["refusal"] === "string" ? message["refusal"] : text
}

/** vLLM names it `reasoning_content`, its newer releases `reasoning`; either, when it is not empty. */
const reasoningOf = (message: Obj): string | undefined => {
  for (const key of ["reasoning_content", "reasoning"]) {
    const value = message[key]
    if (typeof value === "string" && value.length > 0) return value
  }
  return undefined
}

interface FunctionCall {
  readonly callId: string | undefined
  readonly name: string
  readonly arguments: string
}

const functionCalls = (message: Obj): ReadonlyArray<FunctionCall> => {
  const calls = message["tool_calls"]
  if (!Array.isArray(calls)) return []
  const out: Array<FunctionCall> = []
  for (const call of calls) {
    const fn = field(call, "function")
    const name = field(fn, "name")
    if (typeof name !== "string" || (field(call, "type") ?? "function") !== "function") continue
    const args = field(fn, "arguments")
    const id = field(call, "id")
    out.push({
      callId: typeof id === "string" && id.length > 0 ? id : undefined,
      name,
      arguments: typeof args === "string" ? args : args === undefined || args === null ? "{}" : JSON.stringify(args),
    })
  }
  return out
}

const incompleteReason = (finishReason: unknown) =>
  finishReason === "length" ? ("max_output_tokens" as const) : finishReason === "content_filter" ? ("content_filter" as const) : undefined

type Outcome = Pick<ResponseObject, "status" | "completed_at" | "error" | "incomplete_details" | "output"> & {
  readonly usage: ResponseUsage | undefined
}

const assemble = (context: ResponseContext, outcome: Outcome): ResponseObject => ({
  id: context.id,
  object: "response",
  created_at: context.createdAt,
  status: outcome.status,
  background: false,
  completed_at: outcome.completed_at,
  error: outcome.error,
  incomplete_details: outcome.incomplete_details,
  instructions: context.echo.instructions,
  max_output_tokens: context.echo.max_output_tokens,
  model: context.model,
  output: outcome.output,
  parallel_tool_calls: context.echo.parallel_tool_calls,
  service_tier: context.serviceTier,
  temperature: context.echo.temperature,
  text: context.echo.text,
  tool_choice: context.echo.tool_choice,
  tools: context.echo.tools,
  top_p: context.echo.top_p,
  ...(outcome.usage === undefined ? {} : { usage: outcome.usage }),
  metadata: context.echo.metadata,
})

const failed = (context: ResponseContext, error: ResponseError): ResponseObject =>
  assemble(context, { status: "failed", completed_at: null, error, incomplete_details: null, output: [], usage: undefined })

const errorCode = (status: number): ResponseError["code"] =>
  status === 429 ? "rate_limit_exceeded" : status >= 400 && status < 500 ? "invalid_prompt" : "server_error"

/** The upstream's own words for its error, in the shapes OpenAI, vLLM and llama.cpp answer with. */
const upstreamMessage = (body: unknown): string | undefined => {
  for (const candidate of [field(field(body, "error"), "message"), field(body, "error"), field(body, "message"), field(body, "detail")]) {
    if (typeof candidate === "string" && candidate.length > 0) return candidate
  }
  return undefined
}

/** The chat completion's first choice, when the body is one. */
const firstChoice = (body: unknown): Obj | undefined => {
  const choices = field(body, "choices")
  const choice = Array.isArray(choices) ? choices[0] : undefined
  return isObject(choice) && isObject(choice["message"]) ? choice : undefined
}

/**
 * The Response object for a chat completion's answer: its text as a message item, its tool calls as
 * function_call items, its reasoning as a reasoning item; `incomplete` when the model stopped on its
 * token limit or a content filter; `failed`, with the reason, when the upstream gave no completion.
 */
export const responseFrom = (reply: UpstreamReply, context: ResponseContext): ResponseObject => {
  if (reply._tag === "NoAnswer") return failed(context, { code: "server_error", message: reply.message })
  if (reply.status < 200 || reply.status > 299) {
    const said = upstreamMessage(reply.body)
    return failed(context, {
      code: errorCode(reply.status),
      message: `The model server answered ${reply.status}${said === undefined ? "" : `: ${said}`}`,
    })
  }
  const choice = firstChoice(reply.body)
  if (choice === undefined)
    return failed(context, { code: "server_error", message: `The model server answered ${reply.status} with a body that is not a chat completion` })

  const message = choice["message"] as Obj
  const reason = incompleteReason(choice["finish_reason"])
  const itemStatus = reason === undefined ? ("completed" as const) : ("incomplete" as const)
  const output: Array<OutputItem> = []
  const reasoning = reasoningOf(message)
  if (reasoning !== undefined) output.push({ type: "reasoning", id: context.newId("rs"), summary: [{ type: "summary_text", text: reasoning }] })
  const text = messageText(message)
  const calls = functionCalls(message)
  if (text !== "" || calls.length === 0) {
    output.push({
      type: "message",
      id: context.newId("msg"),
      status: itemStatus,
      role: "assistant",
      content: [{ type: "output_text", text, annotations: [] }],
    })
  }
  for (const call of calls) {
    output.push({
      type: "function_call",
      id: context.newId("fc"),
      call_id: call.callId ?? context.newId("call"),
      name: call.name,
      arguments: call.arguments,
      status: itemStatus,
    })
  }
  return assemble(context, {
    status: reason === undefined ? "completed" : "incomplete",
    completed_at: reason === undefined ? context.completedAt : null,
    error: null,
    incomplete_details: reason === undefined ? null : { reason },
    output,
    usage: usageOf(field(reply.body, "usage")),
  })
}
