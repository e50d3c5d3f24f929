import { isObject, type JsonObject as Json } from "../domain/json.js"
import { parseJsonObject } from "./jsonBody.js"

/** The few fields of a chat-completion request the simulator looks at, with minimal validation. */
export interface ChatRequest {
  readonly model: string
  readonly stream: boolean
  readonly includeUsage: boolean
  readonly maxTokens: number | undefined
  /** Text of the last message with role "user" ("" when there is none). */
  readonly lastUserText: string
  /** Total characters of all message contents. */
  readonly promptChars: number
}

/** Content may be a string or an array of parts; only text parts count. */
const textOf = (content: unknown): string => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  let text = ""
  for (const part of content) {
    if (isObject(part) && typeof part.text === "string") text += part.text
  }
  return text
}

/** Returns the request, or the message of a 400 answer. */
export const parseChatRequest = (body: string): ChatRequest | string => {
  const json = parseJsonObject(body)
  if (typeof json === "string") return json
  const { model, messages, stream, stream_options: streamOptions } = json
  if (typeof model !== "string" || model.length === 0) return "You must provide a model parameter."
  if (!Array.isArray(messages) || messages.length === 0) return "'messages' must be a non-empty array."
  if (stream !== undefined && stream !== null && typeof stream !== "boolean") return "'stream' must be a boolean."
  const maxTokens = json.max_completion_tokens ?? json.max_tokens
  if (maxTokens !== undefined && maxTokens !== null && !(Number.isInteger(maxTokens) && (maxTokens as number) > 0)) {
    return "'max_tokens' must be a positive integer."
  }
  let promptChars = 0
  let lastUserText = ""
  for (const message of messages) {
    if (!isObject(message) || typeof message.role !== "string") {
      return "Each message must be an object with a 'role'."
    }
    const text = textOf(message.content)
    promptChars += text.length
    if (message.role === "user") lastUserText = text
  }
  return {
    model,
    stream: stream === true,
    includeUsage: isObject(streamOptions) && streamOptions.include_usage === true,
    maxTokens: typeof maxTokens === "number" ? maxTokens : undefined,
    lastUserText,
    promptChars,
  }
}
