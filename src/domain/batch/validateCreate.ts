import { Either, Schema } from "effect"
import { type CreateLimits, createLimits } from "./createLimits.js"
import { CreateMessage as M, labelledMessage } from "./createMessages.js"
import { type BodyFault, checkChatBody, shown } from "../chat/chatBody.js"
import { checkEmbeddingsBody } from "../embeddings/embeddingsBody.js"
import { BodyRejection, normalizeRowBody, ResponsesMessage as R, sentField } from "./responsesBody.js"
import { isObject, type JsonObject as Obj } from "../json.js"
import { type BatchEndpoint, CHAT_ENDPOINT, isBatchEndpoint } from "./endpoint.js"
import { DEFAULT_PRIORITY, type Priority } from "../scheduling/priority.js"
import { sentPriority } from "./priorityField.js"

export interface ModelAccess {
  /** True when the model exists in the catalog and the account may use it; the validator reports both failures alike. */
  isAvailable(model: string): boolean
  /** The endpoints the model serves (the catalog's); absent, every model serves chat completions and Responses requests. */
  endpointsOf?(model: string): ReadonlyArray<BatchEndpoint>
}

/**
 * A caller's access: the models `served` knows (with the endpoints each serves), narrowed to the
 * account's list when it has one. Data only, so a worker thread builds the same access from a copy.
 */
export const modelAccessOf = (
  served: (model: string) => ReadonlyArray<BatchEndpoint> | undefined,
  accountModels: ReadonlyArray<string> | null,
): ModelAccess => ({
  isAvailable: (model) => served(model) !== undefined && (accountModels === null || accountModels.includes(model)),
  endpointsOf: (model) => served(model) ?? [],
})

export interface ValidRequest {
  readonly custom_id: string
  readonly model: string
  /** As stored and run: a chat body (a Responses-shaped one converted), an embeddings body, or a Responses body as sent. */
  readonly body: Record<string, unknown>
}

export interface ValidBatch {
  /** The one endpoint every row calls. */
  readonly endpoint: BatchEndpoint
  readonly requests: ReadonlyArray<ValidRequest>
  readonly metadata: Record<string, string> | null
  readonly priority: Priority
}

export class CreateRejected extends Schema.TaggedError<CreateRejected>()("CreateRejected", {
  message: Schema.String,
  param: Schema.NullOr(Schema.String),
}) {}

/** How messages and params name a batch's rows: `requests[3]` inline, a line of an uploaded file otherwise. */
export interface RowLabels {
  /** The row as a message names it: `requests[3]`, `line 4`. */
  readonly name: (index: number) => string
  /** What the param of a fault in the row starts with: `requests[3]`. */
  readonly param: (index: number) => string
}

export const inlineRows: RowLabels = { name: (i) => `requests[${i}]`, param: (i) => `requests[${i}]` }

export const isAutoModel = (model: string) => model === "auto" || model.startsWith("auto-")

const batchRow = { streaming: false } as const
const chatModel: ReadonlyArray<BatchEndpoint> = [CHAT_ENDPOINT, "/v1/responses"]

const reject = (message: string, param: string | null) => Either.left(new CreateRejected({ message, param }))

/** The endpoint a batch's rows call: the first one a row's `url` names, chat completions when none does. */
export const endpointOfRows = (requests: ReadonlyArray<unknown>): BatchEndpoint => {
  for (let i = 0; i < requests.length; i++) {
    const request = requests[i]
    if (isObject(request) && isBatchEndpoint(request["url"])) return request["url"]
  }
  return CHAT_ENDPOINT
}

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
  const priority = validatePriority(input["priority"])
  if (Either.isLeft(priority)) return Either.left(priority.left)

  const endpoint = endpointOfRows(requests)
  const valid: Array<ValidRequest> = new Array(requests.length)
  const firstIndexOf = new Map<string, number>()
  for (let i = 0; i < requests.length; i++) {
    const row = validateBatchLine(requests[i], i, inlineRows, endpoint, catalog, l, firstIndexOf)
    if (row instanceof CreateRejected) return Either.left(row)
    valid[i] = row
  }
  return Either.right({ endpoint, requests: valid, metadata: metadata.right, priority: priority.right })
}

const unnamed = (labels: RowLabels, i: number, detail: string, param: string) =>
  new CreateRejected({ message: labelledMessage(labels.name(i), undefined, detail), param: `${labels.param(i)}${param}` })

const named = (labels: RowLabels, i: number, customId: string, detail: string, param: string) =>
  new CreateRejected({ message: labelledMessage(labels.name(i), customId, detail), param: `${labels.param(i)}.${param}` })

/** A fault of the body's own field, named from the row: `body.input[2]`. */
const inBody = (labels: RowLabels, i: number, customId: string, fault: BodyFault) =>
  named(labels, i, customId, `body.${fault.path} ${fault.problem}`, `body.${fault.path}`)

const bodyNotAnObject = (endpoint: BatchEndpoint) =>
  endpoint === CHAT_ENDPOINT ? M.bodyNotAnObject : endpoint === "/v1/embeddings" ? M.embeddingsBodyNotAnObject : M.responsesBodyNotAnObject

/**
 * One row of a batch, inline (`requests[i]`) or a line of an uploaded file, checked against the endpoint
 * its batch calls: the row as stored, or the rejection naming it by `labels`. `seen` holds the custom_ids
 * of the rows checked before it, with their indexes, and learns this one's.
 *
 * Returns rather than wraps its result, and defines no closures: at 50,000 rows per-row allocations are
 * most of the cost, and tsx wraps every closure it creates in a naming call.
 */
export const validateBatchLine = (
  request: unknown,
  i: number,
  labels: RowLabels,
  endpoint: BatchEndpoint,
  catalog: ModelAccess,
  l: CreateLimits,
  seen: Map<string, number>,
): ValidRequest | CreateRejected => {
  if (!isObject(request)) return unnamed(labels, i, M.requestNotAnObject, "")

  const customId = request["custom_id"]
  if (customId === undefined) return unnamed(labels, i, M.customIdMissing, ".custom_id")
  if (typeof customId !== "string") return unnamed(labels, i, M.customIdNotAString, ".custom_id")
  // An empty or oversized custom_id is not quoted in the label: it names nothing, or names too much.
  if (customId.length === 0) return unnamed(labels, i, M.customIdEmpty, ".custom_id")
  if (customId.length > l.maxCustomIdLength)
    return unnamed(labels, i, M.customIdTooLong(customId.length, l.maxCustomIdLength), ".custom_id")

  const firstIndex = seen.get(customId)
  if (firstIndex !== undefined) return named(labels, i, customId, M.customIdRepeats(labels.name(firstIndex)), "custom_id")
  seen.set(customId, i)

  const method = request["method"]
  if (method !== undefined && method !== "POST") return named(labels, i, customId, M.methodNotPost, "method")
  const url = request["url"]
  if (url !== undefined && url !== endpoint)
    return named(labels, i, customId, isBatchEndpoint(url) ? M.urlNotTheBatchEndpoint(url, endpoint) : M.urlUnknown, "url")

  const sent = request["body"]
  if (!isObject(sent)) return named(labels, i, customId, bodyNotAnObject(endpoint), "body")
  if (endpoint === "/v1/embeddings") return embeddingsRow(sent, i, labels, customId, catalog)
  // A Responses row carries Responses input, and is stored as sent: its result is a Response object, which
  // echoes the request (rowCall.ts); it is converted to chat form whenever it is sent.
  if (endpoint === "/v1/responses" && sent["input"] === undefined)
    return named(labels, i, customId, sent["messages"] === undefined ? R.inputNotTextOrList : M.responsesRowMessages, "body.input")
  const body = normalizeRowBody(sent)
  if (body instanceof BodyRejection) return named(labels, i, customId, body.detail, `body${body.param}`)
  const model = body["model"]
  const unusable = modelFault(model, endpoint, catalog)
  if (unusable !== undefined) return named(labels, i, customId, unusable, "body.model")

  const fault = checkChatBody(body, batchRow)
  if (fault !== undefined) {
    const field = body === sent ? { name: `body.${fault.path}`, param: `body.${fault.path}` } : sentField(fault.path, sent)
    return named(labels, i, customId, `${field.name} ${fault.problem}`, field.param)
  }

  return { custom_id: customId, model: model as string, body: endpoint === CHAT_ENDPOINT ? body : sent }
}

const embeddingsRow = (body: Obj, i: number, labels: RowLabels, customId: string, catalog: ModelAccess): ValidRequest | CreateRejected => {
  const model = body["model"]
  const unusable = modelFault(model, "/v1/embeddings", catalog)
  if (unusable !== undefined) return named(labels, i, customId, unusable, "body.model")
  const fault = checkEmbeddingsBody(body)
  if (fault !== undefined) return inBody(labels, i, customId, fault)
  return { custom_id: customId, model: model as string, body }
}

/** Why the row cannot use the model its body names, or undefined when it can. */
const modelFault = (model: unknown, endpoint: BatchEndpoint, catalog: ModelAccess): string | undefined => {
  if (typeof model !== "string" || model.length === 0) return M.modelNotAString(shown(model))
  if (isAutoModel(model)) return M.autoModel(model)
  if (!catalog.isAvailable(model)) return M.modelNotFound(model)
  const served = catalog.endpointsOf === undefined ? chatModel : catalog.endpointsOf(model)
  return served.includes(endpoint) ? undefined : M.modelDoesNotServe(model, endpoint, served)
}

/** A batch's `priority`: standard when absent or null. */
export const validatePriority = (sent: unknown): Either.Either<Priority, CreateRejected> => {
  const asked = sentPriority(sent)
  switch (asked._tag) {
    case "Absent":
      return Either.right(DEFAULT_PRIORITY)
    case "Asked":
      return Either.right(asked.priority)
    case "Refused":
      return reject(asked.message, "priority")
  }
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
