import { Either } from "effect"
import { encodeRows, type EncodedRows } from "../actors/rowsAdded.js"
import type { BatchEndpoint } from "../domain/batch/endpoint.js"
import { modelAccessOf, validateCreateBatch } from "../domain/batch/validateCreate.js"
import { isFileBatchBody } from "../domain/file/fileBatch.js"
import { idempotencyDigest } from "../domain/idempotency/digest.js"
import { BodyMessage } from "./bodyMessages.js"
import type { Priority } from "../domain/scheduling/priority.js"

/** What a create body holds, checked and its rows serialized: all the dispatch thread needs to store it. */
export type PreparedCreate =
  | {
      readonly _tag: "Batch"
      readonly endpoint: BatchEndpoint
      readonly metadata: Record<string, string> | null
      readonly priority: Priority
      /** Each row's model, in order. */
      readonly rowModels: ReadonlyArray<string>
      readonly encoded: EncodedRows
    }
  /** A body this checks no further (a batch from an uploaded file): the create checks it as before. */
  | { readonly _tag: "Other"; readonly input: unknown }
  /** The 400 the create answers, and nothing stored. */
  | { readonly _tag: "Refused"; readonly message: string; readonly param: string | null }

export interface CreateBodyRequest {
  /** The body's bytes, as read. */
  readonly bytes: Uint8Array
  /** The batch the rows' events name. */
  readonly batchId: string
  /** The caller's account's models; null for every model the catalog serves. */
  readonly accountModels: ReadonlyArray<string> | null
  /** Whether to answer the body's SHA-256, for an `Idempotency-Key`. */
  readonly digest: boolean
}

export interface CreateBodyAnswer {
  readonly prepared: PreparedCreate
  /** The body's SHA-256 as an idempotency record keeps it, when asked for. */
  readonly bodySha256?: string
}

/** The catalog as data: each model with the batch endpoints it serves. */
export type ServedModels = ReadonlyArray<readonly [string, ReadonlyArray<BatchEndpoint>]>

/**
 * A create body read, parsed and checked by every rule of an inline create, and its rows serialized
 * into the bytes of their events: the same answers, in the same order, as reading the body as JSON
 * and checking it on the dispatch thread. Synchronous and without I/O, so a worker thread runs it.
 */
export const prepareCreateBody = (request: CreateBodyRequest, served: ReadonlyMap<string, ReadonlyArray<BatchEndpoint>>): CreateBodyAnswer => {
  const text = Buffer.from(request.bytes.buffer, request.bytes.byteOffset, request.bytes.byteLength).toString("utf8")
  const digested = request.digest ? { bodySha256: idempotencyDigest(text) } : {}
  if (text.length === 0) return { ...digested, prepared: refused(BodyMessage.empty) }
  let input: unknown
  try {
    input = JSON.parse(text)
  } catch {
    return { ...digested, prepared: refused(BodyMessage.notJson) }
  }
  if (isFileBatchBody(input)) return { ...digested, prepared: { _tag: "Other", input } }
  const checked = validateCreateBatch(input, modelAccessOf((model) => served.get(model), request.accountModels))
  if (Either.isLeft(checked)) return { ...digested, prepared: refused(checked.left.message, checked.left.param) }
  const batch = checked.right
  return {
    ...digested,
    prepared: {
      _tag: "Batch",
      endpoint: batch.endpoint,
      metadata: batch.metadata,
      priority: batch.priority,
      rowModels: batch.requests.map((r) => r.model),
      encoded: encodeRows(request.batchId, batch.requests),
    },
  }
}

const refused = (message: string, param: string | null = null): PreparedCreate => ({ _tag: "Refused", message, param })
