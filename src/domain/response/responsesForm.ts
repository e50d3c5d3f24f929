import { isObject, type JsonObject as Obj } from "../json.js"
import { BodyRejection } from "./chatForm.js"

/*
 * A batch line's body as a `POST /v1/responses` request, for `stream submit`: a Responses-shaped body
 * as it is, a chat-shaped one (`messages`) with its messages as input items. Sluice turns the request
 * back into a chat body (toChatForm) before it goes upstream, and that body is the one sent: only an
 * assistant turn with both text and tool calls comes back as two turns, which Responses items cannot
 * hold as one.
 */

/** Chat fields that have a Responses name: converted below, not copied. */
const renamed: ReadonlySet<string> = new Set(["messages", "max_tokens", "max_completion_tokens", "response_format", "reasoning_effort", "tool_choice", "tools"])
const messageFields: ReadonlySet<string> = new Set(["role", "content", "tool_calls", "tool_call_id"])
const inputRoles: ReadonlySet<unknown> = new Set(["user", "system", "developer"])

const reject = (detail: string, param: string) => new BodyRejection(detail, param)
const isRejection = (u: unknown): u is BodyRejection => u instanceof BodyRejection

export const toResponsesForm = (body: Obj): Obj | BodyRejection => {
  if (body["input"] !== undefined || body["messages"] === undefined) return body
  const messages = body["messages"]
  if (!Array.isArray(messages) || messages.length === 0) return reject("messages must be a non-empty list of messages", ".messages")
  const input: Array<Obj> = []
  for (let k = 0; k < messages.length; k++) {
    const items = inputItems(messages[k], k)
    if (isRejection(items)) return items
    input.push(...items)
  }

  const request: Obj = {}
  for (const key of Object.keys(body)) if (!renamed.has(key)) request[key] = body[key]
  request["input"] = input
  const maxTokens = body["max_completion_tokens"] ?? body["max_tokens"]
  if (maxTokens !== undefined) request["max_output_tokens"] = maxTokens
  const effort = body["reasoning_effort"]
  if (effort !== undefined && effort !== null) request["reasoning"] = { effort }
  const format = textFormat(body["response_format"])
  if (isRejection(format)) return format
  if (format !== undefined) request["text"] = { format }
  if (body["tools"] !== undefined) request["tools"] = Array.isArray(body["tools"]) ? body["tools"].map(responsesTool) : body["tools"]
  const choice = body["tool_choice"]
  if (choice !== undefined) {
    const fn = isObject(choice) && choice["type"] === "function" && isObject(choice["function"]) ? choice["function"]["name"] : undefined
    request["tool_choice"] = typeof fn === "string" ? { type: "function", name: fn } : choice
  }
  return request
}

const inputItems = (message: unknown, k: number): Array<Obj> | BodyRejection => {
  const at = `.messages[${k}]`
  if (!isObject(message)) return reject(`messages[${k}] must be a message object`, at)
  for (const key of Object.keys(message)) {
    if (!messageFields.has(key) && message[key] !== null)
      return reject(`messages[${k}].${key} cannot be carried by a Responses request: its input items have role and content only`, `${at}.${key}`)
  }
  const { role, content } = message
  if (role === "tool") {
    const callId = message["tool_call_id"]
    if (typeof callId !== "string") return reject(`messages[${k}].tool_call_id must be a string`, `${at}.tool_call_id`)
    const output = toolOutput(content)
    if (output === undefined) return reject(`messages[${k}].content must be a string or a list of text parts`, `${at}.content`)
    return [{ type: "function_call_output", call_id: callId, output }]
  }
  if (role === "assistant") return assistantItems(message, k)
  if (!inputRoles.has(role)) return reject(`messages[${k}].role must be one of user, system, developer, assistant, tool`, `${at}.role`)
  if (message["tool_calls"] !== undefined && message["tool_calls"] !== null)
    return reject(`messages[${k}].tool_calls: only an assistant message makes tool calls`, `${at}.tool_calls`)
  const parts = inputContent(content, k, "input_text")
  if (isRejection(parts)) return parts
  return [{ role, content: parts }]
}

const assistantItems = (message: Obj, k: number): Array<Obj> | BodyRejection => {
  const items: Array<Obj> = []
  const content = message["content"]
  if (content !== undefined && content !== null) {
    const parts = inputContent(content, k, "output_text")
    if (isRejection(parts)) return parts
    items.push({ role: "assistant", content: parts })
  }
  const calls = message["tool_calls"]
  if (calls !== undefined && calls !== null) {
    if (!Array.isArray(calls)) return reject(`messages[${k}].tool_calls must be a list of tool calls`, `.messages[${k}].tool_calls`)
    for (let t = 0; t < calls.length; t++) {
      const call: unknown = calls[t]
      const fn = isObject(call) ? call["function"] : undefined
      if (!isObject(call) || typeof call["id"] !== "string" || !isObject(fn) || typeof fn["name"] !== "string" || typeof fn["arguments"] !== "string")
        return reject(
          `messages[${k}].tool_calls[${t}] must be a function call with string id, function.name and function.arguments`,
          `.messages[${k}].tool_calls[${t}]`,
        )
      items.push({ type: "function_call", call_id: call["id"], name: fn["name"], arguments: fn["arguments"] })
    }
  }
  if (items.length === 0) return reject(`messages[${k}]: an assistant message needs content or tool_calls`, `.messages[${k}]`)
  return items
}

const inputContent = (content: unknown, k: number, textType: "input_text" | "output_text"): string | Array<Obj> | BodyRejection => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return reject(`messages[${k}].content must be a string or a list of content parts`, `.messages[${k}].content`)
  const parts: Array<Obj> = []
  for (let p = 0; p < content.length; p++) {
    const part: unknown = content[p]
    const type = isObject(part) ? part["type"] : undefined
    if (isObject(part) && type === "text" && typeof part["text"] === "string") {
      parts.push({ type: textType, text: part["text"] })
      continue
    }
    const image = isObject(part) && type === "image_url" ? part["image_url"] : undefined
    const url = typeof image === "string" ? image : isObject(image) ? image["url"] : undefined
    if (typeof url === "string") {
      const detail = isObject(image) ? image["detail"] : undefined
      parts.push(detail === undefined ? { type: "input_image", image_url: url } : { type: "input_image", image_url: url, detail })
      continue
    }
    return reject(
      `messages[${k}].content[${p}] must be a text part or an image_url part: a Responses request carries no other${typeof type === "string" ? ` (got '${type}')` : ""}`,
      `.messages[${k}].content[${p}]`,
    )
  }
  return parts
}

const toolOutput = (content: unknown): string | undefined => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return undefined
  const texts = content.map((part: unknown) => (isObject(part) && part["type"] === "text" && typeof part["text"] === "string" ? part["text"] : undefined))
  return texts.every((t) => t !== undefined) ? texts.join("") : undefined
}

const textFormat = (format: unknown): Obj | undefined | BodyRejection => {
  if (format === undefined || format === null) return undefined
  if (isObject(format) && (format["type"] === "text" || format["type"] === "json_object") && Object.keys(format).length === 1) return { type: format["type"] }
  if (isObject(format) && format["type"] === "json_schema" && isObject(format["json_schema"])) return { type: "json_schema", ...format["json_schema"] }
  return reject("response_format must be a text, json_object or json_schema format", ".response_format")
}

/** A chat-form function tool in the Responses form, which the Response object echoes; any other tool as it is. */
const responsesTool = (tool: unknown): unknown =>
  isObject(tool) && tool["type"] === "function" && isObject(tool["function"]) && Object.keys(tool).length === 2
    ? { type: "function", ...tool["function"] }
    : tool
