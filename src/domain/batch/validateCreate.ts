import { Either, Schema } from "effect"
import { type CreateLimits, createLimits } from "./createLimits.js"
import { CreateMessage as M, rowMessage } from "./createMessages.js"
import { checkChatBody, shown } from "../chat/chatBody.js"
import { BodyRejection, normalizeRowBody, sentField } from "./responsesBody.js"
import { isObject, type JsonObject as Obj } from "../json.js"
import { type BatchEndpoint, CHAT_ENDPOINT } from "./endpoint.js"

export interface ModelAccess {
  /** True when the model exists in the catalog and the account may use it; the validator reports both failures alike. */
  isAvailable(model: string): boolean
}

export interface ValidRequest {
  readonly custom_id: string
  readonly model: string
  readonly body: Record<string, unknown>
}

export interface ValidBatch {
  /** The one endpoint every row calls. */
  readonly endpoint: BatchEndpoint
  readonly requests: ReadonlyArray<ValidRequest>
  readonly metadata: Record<string, string> | null
}

export class CreateRejected extends Schema.TaggedError<CreateRejected>()("CreateRejected", {
  message: Schema.String,
  param: Schema.NullOr(Schema.String),
}) {}

export const isAutoModel = (model: string) => model === "auto" || model.startsWith("auto-")

const batchRow = { streaming: false } as const

const reject = (message: string, param: string | null) => Either.left(new CreateRejected({ message, param }))

export const validateCreateBatch = (
  input: unknown,
  catalog: ModelAccess,
  limits?: Partial<CreateLimits>,
): Either.Either<ValidBatch, CreateRejected> => {
  const l = createLimits(limits)
  if (!isObject(input)) return reject(M.notABatch, null)
  const requests = input["requests"]
  if (!Array.isArray(requests)) return reject(M.notABatch, "requests")
  if (requests.length === 0) return reject(M.noRequests, "requests")
  if (requests.length > l.maxRequests) return reject(M.tooManyRequests(requests.length, l.maxRequests), "requests")

  const metadata = validateMetadata(input["metadata"], l)
  if (Either.isLeft(metadata)) return Either.left(metadata.left)

  const valid: Array<ValidRequest> = new Array(requests.length)
  const firstIndexOf = new Map<string, number>()
  for (let i = 0; i < requests.length; i++) {
    const row = validateRow(requests[i], i, catalog, l, firstIndexOf)
    if (row instanceof CreateRejected) return Either.left(row)
    valid[i] = row
  }
  return Either.right({ endpoint: CHAT_ENDPOINT, requests: valid, metadata: metadata.right })
}

const unnamed = (i: number, detail: string, param: string) =>
  new CreateRejected({ message: rowMessage(i, undefined, detail), param: `requests[${i}]${param}` })

const named = (i: number, customId: string, detail: string, param: string) =>
  new CreateRejected({ message: rowMessage(i, customId, detail), param: `requests[${i}].${param}` })

// Returns rather than wraps its result, and defines no closures: at 50,000 rows per-row allocations are most of the
// cost, and tsx wraps every closure it creates in a naming call.
const validateRow = (
  request: unknown,
  i: number,
  catalog: ModelAccess,
  l: CreateLimits,
  firstIndexOf: Map<string, number>,
): ValidRequest | CreateRejected => {
  if (!isObject(request)) return unnamed(i, M.requestNotAnObject, "")

  const customId = request["custom_id"]
  if (customId === undefined) return unnamed(i, M.customIdMissing, ".custom_id")
  if (typeof customId !== "string") return unnamed(i, M.customIdNotAString, ".custom_id")
  // An empty or oversized custom_id is not quoted in the label: it names nothing, or names too much.
  if (customId.length === 0) return unnamed(i, M.customIdEmpty, ".custom_id")
  if (customId.length > l.maxCustomIdLength)
    return unnamed(i, M.customIdTooLong(customId.length, l.maxCustomIdLength), ".custom_id")

  const firstIndex = firstIndexOf.get(customId)
  if (firstIndex !== undefined) return named(i, customId, M.customIdRepeated(firstIndex), "custom_id")
  firstIndexOf.set(customId, i)

  const method = request["method"]
  if (method !== undefined && method !== "POST") return named(i, customId, M.methodNotPost, "method")
  const url = request["url"]
  if (url !== undefined && url !== "/v1/chat/completions") return named(i, customId, M.urlNotChatCompletions, "url")

  const sent = request["body"]
  if (!isObject(sent)) return named(i, customId, M.bodyNotAnObject, "body")
  const body = normalizeRowBody(sent)
  if (body instanceof BodyRejection) return named(i, customId, body.detail, `body${body.param}`)
  const model = body["model"]
  if (typeof model !== "string" || model.length === 0) return named(i, customId, M.modelNotAString(shown(model)), "body.model")
  if (isAutoModel(model)) return named(i, customId, M.autoModel(model), "body.model")
  if (!catalog.isAvailable(model)) return named(i, customId, M.modelNotFound(model), "body.model")

  const fault = checkChatBody(body, batchRow)
  if (fault !== undefined) {
    const field = body === sent ? { name: `body.${fault.path}`, param: `body.${fault.path}` } : sentField(fault.path, sent)
    return named(i, customId, `${field.name} ${fault.problem}`, field.param)
  }

  return { custom_id: customId, model, body }
}

/** A batch's `metadata` (and a response's): string values, within the limits on pairs, keys and values. */
export const validateMetadata = (
  metadata: unknown,
  l: CreateLimits,
): Either.Either<Record<string, string> | null, CreateRejected> => {
  if (metadata === undefined || metadata === null) return Either.right(null)
  if (!isObject(metadata)) return reject(M.metadataNotAnObject, "metadata")
  const keys = Object.keys(metadata)
  if (keys.length > l.maxMetadataPairs) return reject(M.metadataTooManyPairs(keys.length, l.maxMetadataPairs), "metadata")
  for (const key of keys) {
    if (key.length > l.maxMetadataKeyLength) return reject(M.metadataKeyTooLong(key, l.maxMetadataKeyLength), "metadata")
    const value = metadata[key]
    if (typeof value !== "string") return reject(M.metadataValueNotAString(key), `metadata.${key}`)
    if (value.length > l.maxMetadataValueLength)
      return reject(M.metadataValueTooLong(key, value.length, l.maxMetadataValueLength), `metadata.${key}`)
  }
  return Either.right(metadata as Record<string, string>)
}
