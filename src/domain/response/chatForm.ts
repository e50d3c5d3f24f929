import { isObject, type JsonObject as Obj } from "../json.js"

/*
 * A Responses API request turned into the chat-completions body sent upstream: the conversion
 * `POST /v1/responses` and a Responses-shaped batch row both make, each with its own wording.
 */

export class BodyRejection {
  constructor(
    readonly detail: string,
    /** The field at fault, relative to the body: `.input[2].content`. */
    readonly param: string,
  ) {}
}

/** What the conversion says of each fault: a batch row names `body.input`, a request of its own `input`. */
export interface ConversionMessages {
  readonly messagesAndInput: string
  readonly inputNotTextOrList: string
  readonly inputItemNotAnObject: (k: number) => string
  readonly inputItemType: (k: number, type: string) => string
  readonly inputRole: (k: number) => string
  readonly inputContent: (k: number) => string
  readonly inputPart: (k: number, p: number) => string
  readonly functionCall: (k: number) => string
  readonly functionCallOutput: (k: number) => string
  readonly instructions: string
  readonly stateful: (field: string) => string
  readonly tool: (t: number) => string
  readonly textFormat: string
}

const reject = (detail: string, param: string): BodyRejection => new BodyRejection(detail, param)

const isRejection = (u: unknown): u is BodyRejection => u instanceof BodyRejection

const roles: ReadonlySet<unknown> = new Set(["user", "assistant", "system", "developer"])

/** Fields of a Responses body that only mean something to a stateful Responses server. */
const dropped: ReadonlySet<string> = new Set(["input", "instructions", "max_output_tokens", "text", "reasoning", "store", "include", "truncation", "background"])

/**
 * A body carrying `input` as a new chat body; its other fields (temperature, top_p, seed, ...) carry over.
 */
export const toChatForm = (body: Obj, m: ConversionMessages): Obj | BodyRejection => {
  if (body["messages"] !== undefined) return reject(m.messagesAndInput, ".input")
  for (const field of ["previous_response_id", "conversation", "prompt"]) {
    if (body[field] !== undefined && body[field] !== null) return reject(m.stateful(field), `.${field}`)
  }

  const messages: Array<Obj> = []
  const instructions = body["instructions"]
  if (instructions !== undefined && instructions !== null) {
    if (typeof instructions !== "string") return reject(m.instructions, ".instructions")
    messages.push({ role: "system", content: instructions })
  }
  const fromInput = inputMessages(body["input"], m)
  if (isRejection(fromInput)) return fromInput
  for (const message of fromInput) messages.push(message)

  const chat: Obj = {}
  for (const key of Object.keys(body)) if (!dropped.has(key)) chat[key] = body[key]
  chat["messages"] = messages
  if (body["max_output_tokens"] !== undefined) chat["max_tokens"] = body["max_output_tokens"]
  const reasoning = body["reasoning"]
  if (isObject(reasoning) && reasoning["effort"] !== undefined) chat["reasoning_effort"] = reasoning["effort"]

  const format = responseFormat(body["text"], m)
  if (isRejection(format)) return format
  if (format !== undefined) chat["response_format"] = format

  if (body["tools"] !== undefined) {
    const tools = chatTools(body["tools"], m)
    if (isRejection(tools)) return tools
    chat["tools"] = tools
  }
  const choice = body["tool_choice"]
  if (isObject(choice) && choice["type"] === "function" && typeof choice["name"] === "string")
    chat["tool_choice"] = { type: "function", function: { name: choice["name"] } }
  return chat
}

const inputMessages = (input: unknown, m: ConversionMessages): Array<Obj> | BodyRejection => {
  if (typeof input === "string") {
    if (input.length === 0) return reject(m.inputNotTextOrList, ".input")
    return [{ role: "user", content: input }]
  }
  if (!Array.isArray(input) || input.length === 0) return reject(m.inputNotTextOrList, ".input")
  const messages: Array<Obj> = []
  for (let k = 0; k < input.length; k++) {
    const item: unknown = input[k]
    if (!isObject(item)) return reject(m.inputItemNotAnObject(k), `.input[${k}]`)
    const type = item["type"] ?? "message"
    if (type === "message") {
      const message = chatMessage(item, k, m)
      if (isRejection(message)) return message
      messages.push(message)
    } else if (type === "function_call") {
      const { call_id, name, arguments: args } = item
      if (typeof call_id !== "string" || typeof name !== "string" || typeof args !== "string")
        return reject(m.functionCall(k), `.input[${k}]`)
      const call = { id: call_id, type: "function", function: { name, arguments: args } }
      // Calls made together are one assistant turn in chat form.
      const previous = messages[messages.length - 1]
      if (previous !== undefined && previous["role"] === "assistant" && Array.isArray(previous["tool_calls"]))
        previous["tool_calls"].push(call)
      else messages.push({ role: "assistant", content: null, tool_calls: [call] })
    } else if (type === "function_call_output") {
      const { call_id, output } = item
      if (typeof call_id !== "string" || typeof output !== "string")
        return reject(m.functionCallOutput(k), `.input[${k}]`)
      messages.push({ role: "tool", tool_call_id: call_id, content: output })
    } else {
      return reject(m.inputItemType(k, String(type)), `.input[${k}].type`)
    }
  }
  return messages
}

const chatMessage = (item: Obj, k: number, m: ConversionMessages): Obj | BodyRejection => {
  const role = item["role"]
  if (!roles.has(role)) return reject(m.inputRole(k), `.input[${k}].role`)
  const content = item["content"]
  if (typeof content === "string") return { role, content }
  if (!Array.isArray(content)) return reject(m.inputContent(k), `.input[${k}].content`)
  const parts: Array<Obj> = []
  for (let p = 0; p < content.length; p++) {
    const part = chatPart(content[p])
    if (part === undefined) return reject(m.inputPart(k, p), `.input[${k}].content[${p}]`)
    parts.push(part)
  }
  return { role, content: parts }
}

const chatPart = (part: unknown): Obj | undefined => {
  if (!isObject(part)) return undefined
  const type = part["type"]
  if ((type === "input_text" || type === "output_text" || type === "text") && typeof part["text"] === "string")
    return { type: "text", text: part["text"] }
  if (type === "input_image") {
    const image = part["image_url"]
    const url = typeof image === "string" ? image : isObject(image) ? image["url"] : undefined
    if (typeof url !== "string") return undefined
    return { type: "image_url", image_url: part["detail"] === undefined ? { url } : { url, detail: part["detail"] } }
  }
  return undefined
}

const responseFormat = (text: unknown, m: ConversionMessages): Obj | undefined | BodyRejection => {
  if (text === undefined || text === null) return undefined
  const format = isObject(text) ? text["format"] : undefined
  if (isObject(text) && format === undefined) return undefined
  if (!isObject(format)) return reject(m.textFormat, ".text.format")
  switch (format["type"]) {
    case "text":
      return undefined
    case "json_object":
      return { type: "json_object" }
    case "json_schema": {
      const { type: _type, ...schema } = format
      return { type: "json_schema", json_schema: schema }
    }
    default:
      return reject(m.textFormat, ".text.format")
  }
}

const chatTools = (tools: unknown, m: ConversionMessages): Array<Obj> | BodyRejection => {
  if (!Array.isArray(tools)) return reject(m.tool(0), ".tools")
  const out: Array<Obj> = []
  for (let t = 0; t < tools.length; t++) {
    const tool: unknown = tools[t]
    if (!isObject(tool) || tool["type"] !== "function") return reject(m.tool(t), `.tools[${t}]`)
    // Chat-form tools are accepted as they are, so a converted request can be sent back unchanged.
    if (isObject(tool["function"])) {
      out.push(tool)
      continue
    }
    if (typeof tool["name"] !== "string") return reject(m.tool(t), `.tools[${t}]`)
    const { type: _type, ...fn } = tool
    out.push({ type: "function", function: fn })
  }
  return out
}

/**
 * Where a field of the converted chat body came from in the Responses body sent: its name for a
 * message, and the param that names it, both after `prefix` (`body.` for a batch row). A message
 * converted from the input keeps its chat path, with where it came from.
 */
export const sentField = (path: string, sent: Obj, prefix: string): { readonly name: string; readonly param: string } => {
  const same = (p: string) => ({ name: `${prefix}${p}`, param: `${prefix}${p}` })
  const dot = path.search(/[.[]/)
  const head = dot === -1 ? path : path.slice(0, dot)
  const rest = dot === -1 ? "" : path.slice(dot)
  switch (head) {
    case "max_tokens":
      return sent["max_tokens"] === undefined && sent["max_output_tokens"] !== undefined ? same("max_output_tokens") : same(path)
    case "reasoning_effort":
      return sent["reasoning_effort"] === undefined && isObject(sent["reasoning"]) ? same(`reasoning.effort${rest}`) : same(path)
    case "response_format":
      return sent["response_format"] === undefined && isObject(sent["text"]) ? same(`text.format${rest.replace(/^\.json_schema/, "")}`) : same(path)
    case "tool_choice":
      return isObject(sent["tool_choice"]) && sent["tool_choice"]["function"] === undefined ? same(`tool_choice${rest.replace(/^\.function/, "")}`) : same(path)
    case "tools": {
      const index = /^\[(\d+)\]\.function(.*)$/.exec(rest)
      const tools = sent["tools"]
      if (index === null || !Array.isArray(tools) || !isObject(tools[Number(index[1])])) return same(path)
      return (tools[Number(index[1])] as Obj)["function"] === undefined ? same(`tools[${index[1]}]${index[2]}`) : same(path)
    }
    case "messages": {
      const from = sent["instructions"] !== undefined && sent["instructions"] !== null && rest.startsWith("[0]") ? `${prefix}instructions` : `${prefix}input`
      return { name: `${prefix}${path} (converted from ${from})`, param: from }
    }
    default:
      return same(path)
  }
}
