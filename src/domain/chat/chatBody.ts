/*
 * The fields of a chat-completion request body that the OpenAI API documents, checked by type and
 * range as the API states them, so that a body every server would refuse is refused before it is
 * stored. Fields the API does not document (vLLM's `guided_json`, `chat_template_kwargs`, ...) pass
 * through untouched; a documented field takes only the values the API documents (a content part of
 * vLLM's own `video_url` type is refused). `null` is taken exactly where the API's own types take it,
 * and stands for not given. Written as plain functions
 * over the keys a body has, with no closure per row: a create checks up to 50,000 bodies.
 */

import { isObject, type JsonObject as Obj } from "../json.js"

/** A field at fault: its path from the body (`temperature`, `messages[2].content[0].text`) and what it must be. */
export interface BodyFault {
  readonly path: string
  /** `must be a number from 0 to 2, got "hot"`, to follow the field's name. */
  readonly problem: string
}

export interface ChatBodyOptions {
  /** `stream: true` is allowed (interactive requests); a batch row may not stream. */
  readonly streaming: boolean
}

const MAX_SHOWN = 40

/** The value as a message shows it: JSON for scalars (cut short), a word for the rest. */
export const shown = (value: unknown): string => {
  if (value === undefined) return "nothing"
  if (Array.isArray(value)) return "an array"
  if (typeof value === "object" && value !== null) return "an object"
  const text = JSON.stringify(value) ?? String(value)
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN - 1)}…` : text
}

const fault = (path: string, expected: string, got: unknown): BodyFault => ({ path, problem: `must be ${expected}, got ${shown(got)}` })

const numberIn = (path: string, value: unknown, min: number, max: number, nullable: boolean) =>
  (value === null && nullable) || (typeof value === "number" && value >= min && value <= max)
    ? undefined
    : fault(path, `a number from ${min} to ${max}`, value)

const integerFrom = (path: string, value: unknown, min: number, max: number | undefined) =>
  value === null || (Number.isSafeInteger(value) && (value as number) >= min && (max === undefined || (value as number) <= max))
    ? undefined
    : fault(path, max === undefined ? `an integer of at least ${min}` : `an integer from ${min} to ${max}`, value)

const booleanOrNull = (path: string, value: unknown, nullable: boolean) =>
  typeof value === "boolean" || (value === null && nullable) ? undefined : fault(path, "true or false", value)

const stringField = (path: string, value: unknown, nullable: boolean) =>
  typeof value === "string" || (value === null && nullable) ? undefined : fault(path, "a string", value)

const oneOf = (path: string, value: unknown, allowed: ReadonlyArray<string>, nullable: boolean) =>
  (typeof value === "string" && allowed.includes(value)) || (value === null && nullable)
    ? undefined
    : fault(path, `one of ${allowed.join(", ")}`, value)

const objectField = (path: string, value: unknown, nullable: boolean) =>
  isObject(value) || (value === null && nullable) ? undefined : fault(path, "an object", value)

/** An optional key of `o`: absent is fine, present is checked. */
const optionalString = (o: Obj, key: string, path: string, nullable = false) =>
  o[key] === undefined ? undefined : stringField(`${path}.${key}`, o[key], nullable)

// The OpenAI API's rule for function and schema names.
const NAME = /^[a-zA-Z0-9_-]{1,64}$/
const name = (path: string, value: unknown) =>
  typeof value === "string" && NAME.test(value) ? undefined : fault(path, "a name of 1 to 64 letters, digits, _ or -", value)

const TOKEN_ID = /^(0|[1-9][0-9]*)$/

const logitBias = (value: unknown) => {
  if (value === null) return undefined
  if (!isObject(value)) return fault("logit_bias", "an object of token ids and biases", value)
  for (const token of Object.keys(value)) {
    if (!TOKEN_ID.test(token)) return fault(`logit_bias`, "keyed by token ids (whole numbers)", token)
    const bias = numberIn(`logit_bias.${token}`, value[token], -100, 100, false)
    if (bias !== undefined) return bias
  }
  return undefined
}

const stop = (value: unknown) => {
  if (value === null || typeof value === "string") return undefined
  if (!Array.isArray(value) || value.length > 4) return fault("stop", "a string or an array of up to 4 strings", value)
  for (let i = 0; i < value.length; i++) if (typeof value[i] !== "string") return fault(`stop[${i}]`, "a string", value[i])
  return undefined
}

const functionDefinition = (path: string, value: unknown) => {
  if (!isObject(value)) return fault(path, "a function definition object", value)
  return (
    name(`${path}.name`, value["name"]) ??
    optionalString(value, "description", path) ??
    (value["parameters"] === undefined ? undefined : objectField(`${path}.parameters`, value["parameters"], false)) ??
    (value["strict"] === undefined ? undefined : booleanOrNull(`${path}.strict`, value["strict"], true))
  )
}

const customFormat = (path: string, value: unknown) => {
  if (!isObject(value)) return fault(path, "a text or grammar format", value)
  if (value["type"] === "text") return undefined
  if (value["type"] !== "grammar") return fault(`${path}.type`, "one of text, grammar", value["type"])
  const grammar = value["grammar"]
  if (!isObject(grammar)) return fault(`${path}.grammar`, "an object with a definition and a syntax", grammar)
  return stringField(`${path}.grammar.definition`, grammar["definition"], false) ?? oneOf(`${path}.grammar.syntax`, grammar["syntax"], ["lark", "regex"], false)
}

const tool = (path: string, value: unknown) => {
  if (!isObject(value)) return fault(path, "a tool object", value)
  switch (value["type"]) {
    case "function":
      return functionDefinition(`${path}.function`, value["function"])
    case "custom": {
      const custom = value["custom"]
      if (!isObject(custom)) return fault(`${path}.custom`, "a custom tool object", custom)
      return (
        stringField(`${path}.custom.name`, custom["name"], false) ??
        optionalString(custom, "description", `${path}.custom`) ??
        (custom["format"] === undefined ? undefined : customFormat(`${path}.custom.format`, custom["format"]))
      )
    }
    default:
      return fault(`${path}.type`, "one of function, custom", value["type"])
  }
}

const tools = (value: unknown) => {
  if (!Array.isArray(value)) return fault("tools", "an array of tools", value)
  for (let i = 0; i < value.length; i++) {
    const bad = tool(`tools[${i}]`, value[i])
    if (bad !== undefined) return bad
  }
  return undefined
}

const toolNames = (body: Obj, type: "function" | "custom"): ReadonlyArray<unknown> =>
  Array.isArray(body["tools"])
    ? body["tools"].filter((t) => isObject(t) && t["type"] === type).map((t) => ((t as Obj)[type] as Obj)["name"])
    : []

const toolChoice = (value: unknown, body: Obj) => {
  // Servers refuse a tool choice without tools to choose from, and a named tool the request does not offer.
  const offered = Array.isArray(body["tools"]) && body["tools"].length > 0
  if (typeof value === "string") {
    const bad = oneOf("tool_choice", value, ["none", "auto", "required"], false)
    if (bad !== undefined || value === "none" || offered) return bad
    return fault("tool_choice", "none unless tools offers tools", value)
  }
  if (!isObject(value)) return fault("tool_choice", "none, auto, required or a tool choice object", value)
  if (!offered) return fault("tool_choice", "none unless tools offers tools", value)
  switch (value["type"]) {
    case "function":
    case "custom": {
      const type = value["type"]
      const chosen = value[type]
      if (!isObject(chosen)) return fault(`tool_choice.${type}`, `an object naming a ${type} tool`, chosen)
      if (typeof chosen["name"] !== "string") return fault(`tool_choice.${type}.name`, "a string", chosen["name"])
      return toolNames(body, type).includes(chosen["name"])
        ? undefined
        : fault(`tool_choice.${type}.name`, `the name of one of the ${type} tools in tools`, chosen["name"])
    }
    case "allowed_tools": {
      const allowed = value["allowed_tools"]
      if (!isObject(allowed)) return fault("tool_choice.allowed_tools", "an object with a mode and tools", allowed)
      const mode = oneOf("tool_choice.allowed_tools.mode", allowed["mode"], ["auto", "required"], false)
      if (mode !== undefined) return mode
      const list = allowed["tools"]
      if (!Array.isArray(list) || !list.every(isObject)) return fault("tool_choice.allowed_tools.tools", "an array of tool objects", list)
      return undefined
    }
    default:
      return fault("tool_choice.type", "one of function, custom, allowed_tools", value["type"])
  }
}

const responseFormat = (value: unknown) => {
  if (!isObject(value)) return fault("response_format", "a text, json_object or json_schema format", value)
  switch (value["type"]) {
    case "text":
    case "json_object":
      return undefined
    case "json_schema": {
      const schema = value["json_schema"]
      if (!isObject(schema)) return fault("response_format.json_schema", "an object with the schema's name", schema)
      return (
        name("response_format.json_schema.name", schema["name"]) ??
        optionalString(schema, "description", "response_format.json_schema") ??
        (schema["schema"] === undefined ? undefined : objectField("response_format.json_schema.schema", schema["schema"], false)) ??
        (schema["strict"] === undefined ? undefined : booleanOrNull("response_format.json_schema.strict", schema["strict"], true))
      )
    }
    default:
      return fault("response_format.type", "one of text, json_object, json_schema", value["type"])
  }
}

const streamOptions = (value: unknown, body: Obj) => {
  if (value === null) return undefined
  // Servers take stream options only for a streamed answer, which a batch row never is.
  if (body["stream"] !== true) return fault("stream_options", "null unless stream is true", value)
  if (!isObject(value)) return fault("stream_options", "an object", value)
  for (const key of ["include_usage", "include_obfuscation"]) {
    if (value[key] !== undefined) {
      const bad = booleanOrNull(`stream_options.${key}`, value[key], false)
      if (bad !== undefined) return bad
    }
  }
  return undefined
}

const reasoningEfforts = ["none", "minimal", "low", "medium", "high", "xhigh", "max"]

// ------------------------------------------------------------------------------------------------
// Messages

const TEXT_PART = ["text"]
const ASSISTANT_PARTS = ["text", "refusal"]
const USER_PARTS = ["text", "image_url", "input_audio", "file"]

const part = (path: string, value: unknown, types: ReadonlyArray<string>) => {
  if (!isObject(value)) return fault(path, `a content part (${types.join(", ")})`, value)
  const type = value["type"]
  switch (type) {
    case "text":
      if (!types.includes(type)) break
      return stringField(`${path}.text`, value["text"], false)
    case "refusal":
      if (!types.includes(type)) break
      return stringField(`${path}.refusal`, value["refusal"], false)
    case "image_url": {
      if (!types.includes(type)) break
      const image = value["image_url"]
      if (!isObject(image)) return fault(`${path}.image_url`, "an object with a url", image)
      return (
        stringField(`${path}.image_url.url`, image["url"], false) ??
        (image["detail"] === undefined ? undefined : oneOf(`${path}.image_url.detail`, image["detail"], ["auto", "low", "high", "original"], false))
      )
    }
    case "input_audio": {
      if (!types.includes(type)) break
      const audio = value["input_audio"]
      if (!isObject(audio)) return fault(`${path}.input_audio`, "an object with data and a format", audio)
      return stringField(`${path}.input_audio.data`, audio["data"], false) ?? oneOf(`${path}.input_audio.format`, audio["format"], ["wav", "mp3"], false)
    }
    case "file": {
      if (!types.includes(type)) break
      const file = value["file"]
      if (!isObject(file)) return fault(`${path}.file`, "an object with file_data, file_id or filename", file)
      return optionalString(file, "file_data", `${path}.file`) ?? optionalString(file, "file_id", `${path}.file`) ?? optionalString(file, "filename", `${path}.file`)
    }
  }
  return fault(`${path}.type`, `one of ${types.join(", ")}`, type)
}

/** `content`: a string, or an array of the role's part types. */
const content = (path: string, value: unknown, types: ReadonlyArray<string>) => {
  if (typeof value === "string") return undefined
  if (!Array.isArray(value)) return fault(path, `a string or an array of content parts (${types.join(", ")})`, value)
  for (let p = 0; p < value.length; p++) {
    const bad = part(`${path}[${p}]`, value[p], types)
    if (bad !== undefined) return bad
  }
  return undefined
}

const toolCall = (path: string, value: unknown) => {
  if (!isObject(value)) return fault(path, "a tool call object", value)
  const id = stringField(`${path}.id`, value["id"], false)
  if (id !== undefined) return id
  const type = value["type"]
  if (type !== "function" && type !== "custom") return fault(`${path}.type`, "one of function, custom", type)
  const call = value[type]
  if (!isObject(call)) return fault(`${path}.${type}`, `an object with the ${type === "function" ? "function's name and arguments" : "tool's name and input"}`, call)
  return stringField(`${path}.${type}.name`, call["name"], false) ?? stringField(`${path}.${type}.${type === "function" ? "arguments" : "input"}`, call[type === "function" ? "arguments" : "input"], false)
}

const assistant = (path: string, m: Obj) => {
  const calls = m["tool_calls"]
  if (calls !== undefined) {
    if (!Array.isArray(calls)) return fault(`${path}.tool_calls`, "an array of tool calls", calls)
    for (let c = 0; c < calls.length; c++) {
      const bad = toolCall(`${path}.tool_calls[${c}]`, calls[c])
      if (bad !== undefined) return bad
    }
  }
  const call = m["function_call"]
  if (call !== undefined && call !== null) {
    if (!isObject(call)) return fault(`${path}.function_call`, "an object with the function's name and arguments", call)
    const bad = stringField(`${path}.function_call.name`, call["name"], false) ?? stringField(`${path}.function_call.arguments`, call["arguments"], false)
    if (bad !== undefined) return bad
  }
  const audio = m["audio"]
  if (audio !== undefined && audio !== null && !(isObject(audio) && typeof audio["id"] === "string")) {
    return fault(`${path}.audio`, "an object with the id of an earlier audio answer", audio)
  }
  const text = m["content"]
  if (text === undefined || text === null) {
    // The API takes an assistant turn without content only when it calls tools (or replays audio).
    const acts = (Array.isArray(calls) && calls.length > 0) || isObject(call) || isObject(audio)
    return acts ? undefined : fault(`${path}.content`, "a string or an array of text and refusal parts, unless the message has tool_calls", text)
  }
  return content(`${path}.content`, text, ASSISTANT_PARTS) ?? optionalString(m, "refusal", path, true)
}

const message = (i: number, m: unknown): BodyFault | undefined => {
  const path = `messages[${i}]`
  if (!isObject(m)) return fault(path, "a message object with a role", m)
  switch (m["role"]) {
    case "system":
    case "developer":
      return content(`${path}.content`, m["content"], TEXT_PART) ?? optionalString(m, "name", path)
    case "user":
      return content(`${path}.content`, m["content"], USER_PARTS) ?? optionalString(m, "name", path)
    case "assistant":
      return assistant(path, m) ?? optionalString(m, "name", path)
    case "tool":
      return content(`${path}.content`, m["content"], TEXT_PART) ?? stringField(`${path}.tool_call_id`, m["tool_call_id"], false)
    case "function":
      return (m["content"] === null ? undefined : stringField(`${path}.content`, m["content"], true)) ?? stringField(`${path}.name`, m["name"], false)
    default:
      return fault(`${path}.role`, "one of system, developer, user, assistant, tool, function", m["role"])
  }
}

const messages = (value: unknown) => {
  if (!Array.isArray(value) || value.length === 0) return fault("messages", "a non-empty array of messages", value)
  for (let i = 0; i < value.length; i++) {
    const bad = message(i, value[i])
    if (bad !== undefined) return bad
  }
  return undefined
}

// ------------------------------------------------------------------------------------------------

type Check = (value: unknown, body: Obj, options: ChatBodyOptions) => BodyFault | undefined

/** Every documented field this checks, by name; any other field passes through untouched. */
const checks: Readonly<Record<string, Check>> = {
  model: (v) => (typeof v === "string" && v.length > 0 ? undefined : fault("model", "a string naming a model", v)),
  messages,
  max_tokens: (v) => integerFrom("max_tokens", v, 1, undefined),
  max_completion_tokens: (v) => integerFrom("max_completion_tokens", v, 1, undefined),
  temperature: (v) => numberIn("temperature", v, 0, 2, true),
  top_p: (v) => numberIn("top_p", v, 0, 1, true),
  n: (v) => integerFrom("n", v, 1, undefined),
  stop,
  presence_penalty: (v) => numberIn("presence_penalty", v, -2, 2, true),
  frequency_penalty: (v) => numberIn("frequency_penalty", v, -2, 2, true),
  logit_bias: logitBias,
  logprobs: (v) => booleanOrNull("logprobs", v, true),
  top_logprobs: (v, body) =>
    integerFrom("top_logprobs", v, 0, 20) ??
    (v !== null && body["logprobs"] !== true ? fault("top_logprobs", "null unless logprobs is true", v) : undefined),
  seed: (v) => (v === null || Number.isSafeInteger(v) ? undefined : fault("seed", "an integer", v)),
  tools,
  tool_choice: toolChoice,
  parallel_tool_calls: (v) => booleanOrNull("parallel_tool_calls", v, false),
  response_format: responseFormat,
  stream: (v, _body, options) =>
    v === true && !options.streaming ? fault("stream", "false or absent: batch requests cannot stream", v) : booleanOrNull("stream", v, true),
  stream_options: streamOptions,
  user: (v) => stringField("user", v, false),
  reasoning_effort: (v) => oneOf("reasoning_effort", v, reasoningEfforts, true),
}

/** The first field at fault in the body's own key order, or undefined when every documented field is sound. */
export const checkChatBody = (body: Obj, options: ChatBodyOptions): BodyFault | undefined => {
  if (body["model"] === undefined) return fault("model", "a string naming a model", undefined)
  if (body["messages"] === undefined) return fault("messages", "a non-empty array of messages", undefined)
  for (const key of Object.keys(body)) {
    const check = checks[key]
    if (check === undefined) continue
    const bad = check(body[key], body, options)
    if (bad !== undefined) return bad
  }
  return undefined
}

/** The fields this checks: the ones the OpenAI API documents that a batch row or a chat request may set. */
export const checkedFields: ReadonlyArray<string> = Object.keys(checks)
