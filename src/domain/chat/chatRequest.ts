import { Either } from "effect"
import { checkChatBody, shown } from "./chatBody.js"
import { isObject, type JsonObject as Obj } from "../json.js"

export interface ValidChat {
  readonly model: string
  readonly stream: boolean
  /** The caller asked for the usage chunk at the end of a stream (`stream_options.include_usage`). */
  readonly wantsUsage: boolean
  readonly body: Readonly<Record<string, unknown>>
}

export type ChatRejected =
  | { readonly _tag: "Invalid"; readonly message: string; readonly param: string | null }
  | { readonly _tag: "ModelNotFound"; readonly message: string }

const invalid = (message: string, param: string | null = null) =>
  Either.left<ChatRejected>({ _tag: "Invalid", message, param })

const interactive = { streaming: true } as const

/**
 * A chat-completion request as `/v1/chat/completions` takes it, every documented field checked as a
 * batch row's is; a model the caller may not use reads as one that does not exist.
 */
export const validateChatRequest = (
  input: unknown,
  isAvailable: (model: string) => boolean,
): Either.Either<ValidChat, ChatRejected> => {
  if (!isObject(input)) return invalid("The request body must be a chat-completion request object")
  const model = input["model"]
  if (typeof model !== "string" || model.length === 0) return invalid(`model must be a string naming a model, got ${shown(model)}`, "model")
  if (!isAvailable(model)) return Either.left({ _tag: "ModelNotFound", message: `Model '${model}' not found` })
  const fault = checkChatBody(input, interactive)
  if (fault !== undefined) return invalid(`${fault.path} ${fault.problem}`, fault.path)
  const stream = input["stream"]
  const options = input["stream_options"]
  return Either.right({ model, stream: stream === true, wantsUsage: isObject(options) && options["include_usage"] === true, body: input })
}

/**
 * The body sent upstream: the model under the upstream's name, and a stream always asks for its usage,
 * since an answer's cost counts toward the caller's quota (the chunk is not passed on unless asked for).
 */
export const upstreamChatBody = (chat: ValidChat, upstreamModel: string): string => {
  const options = chat.body["stream_options"]
  return JSON.stringify(
    chat.stream
      ? { ...chat.body, model: upstreamModel, stream_options: { ...(isObject(options) ? options : {}), include_usage: true } }
      : { ...chat.body, model: upstreamModel },
  )
}
