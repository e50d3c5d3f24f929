import { Either } from "effect"
import { createLimits } from "../batch/createLimits.js"
import { validateMetadata } from "../batch/validateCreate.js"
import { checkChatBody, shown } from "../chat/chatBody.js"
import type { ChatRejected } from "../chat/chatRequest.js"
import { isObject, type JsonObject as Obj } from "../json.js"
import { BodyRejection, sentField, toChatForm } from "./chatForm.js"
import { type ResponseEcho, echoOf } from "./echo.js"
import { queueFields } from "./queueFields.js"
import { sentPriority } from "../batch/priorityField.js"
import type { Priority } from "../scheduling/priority.js"
import { ResponseRequestMessage as M } from "./requestMessages.js"

export interface ValidResponseRequest {
  readonly model: string
  /** The chat-completions body to send upstream, still naming the model by its public id. */
  readonly chat: Readonly<Obj>
  readonly echo: ResponseEcho
  /** The `priority` it asked for; absent when it named none. */
  readonly priority?: Priority
}

export const ServiceTiers = ["auto", "default", "flex", "scale", "priority"] as const

/** Fields the Response object answers for, which mean nothing to the model's upstream. */
const ownFields: ReadonlyArray<string> = ["metadata", "service_tier", "max_queue_wait_s", "priority"]

const invalid = (message: string, param: string | null) => Either.left<ChatRejected>({ _tag: "Invalid", message, param })

const refused = (rejection: BodyRejection) => invalid(rejection.detail, rejection.param.replace(/^\./, ""))

/**
 * A `POST /v1/responses` body, converted and checked exactly as a Responses-shaped batch row is, with
 * its fields named from the request; a model the caller may not use reads as one that does not exist.
 */
export const validateResponseRequest = (
  input: unknown,
  isAvailable: (model: string) => boolean,
): Either.Either<ValidResponseRequest, ChatRejected> => {
  if (!isObject(input)) return invalid(M.notAnObject, null)
  if (input["stream"] === true) return invalid(M.stream, "stream")
  const queueFault = queueFields(input)
  if (queueFault !== undefined) return refused(queueFault)
  const background = input["background"]
  if (background !== undefined && background !== null && typeof background !== "boolean")
    return invalid(`background must be true or false, got ${shown(background)}`, "background")
  const tier = input["service_tier"]
  if (tier !== undefined && tier !== null && !(ServiceTiers as ReadonlyArray<unknown>).includes(tier))
    return invalid(`service_tier must be one of ${ServiceTiers.join(", ")}, got ${shown(tier)}`, "service_tier")
  const metadata = validateMetadata(input["metadata"], createLimits())
  if (Either.isLeft(metadata)) return invalid(metadata.left.message, metadata.left.param)
  const priority = sentPriority(input["priority"])
  if (priority._tag === "Refused") return invalid(priority.message, "priority")

  if (input["input"] === undefined) return invalid(M.inputNotTextOrList, "input")
  const converted = toChatForm(input, M)
  if (converted instanceof BodyRejection) return refused(converted)
  const model = converted["model"]
  if (typeof model !== "string" || model.length === 0) return invalid(M.modelNotAString(shown(model)), "model")
  if (!isAvailable(model)) return Either.left({ _tag: "ModelNotFound", message: M.modelNotFound(model) })

  const chat: Obj = {}
  for (const key of Object.keys(converted)) if (!ownFields.includes(key)) chat[key] = converted[key]
  const fault = checkChatBody(chat, { streaming: true })
  if (fault !== undefined) {
    const field = sentField(fault.path, input, "")
    return invalid(`${field.name} ${fault.problem}`, field.param)
  }
  const valid = { model, chat, echo: echoOf(input) }
  return Either.right(priority._tag === "Asked" ? { ...valid, priority: priority.priority } : valid)
}
