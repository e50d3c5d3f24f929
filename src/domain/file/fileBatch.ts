import { Either } from "effect"
import { type CreateLimits, createLimits } from "../batch/createLimits.js"
import { type BatchEndpoint, BatchEndpoints, isBatchEndpoint } from "../batch/endpoint.js"
import {
  CreateRejected,
  type ModelAccess,
  type RowLabels,
  type ValidRequest,
  validateBatchLine,
  validateMetadata,
  validatePriority,
} from "../batch/validateCreate.js"
import type { Priority } from "../scheduling/priority.js"
import { isObject } from "../json.js"

/*
 * OpenAI's create body for a batch read from an uploaded file, and its lines checked one at a time as
 * they are read: a file of 200 MB is never held whole, and each line is checked by exactly the rules an
 * inline row is, named by its line number instead of `requests[i]`.
 */

export interface FileBatchRequest {
  readonly inputFileId: string
  readonly endpoint: BatchEndpoint
  readonly metadata: Record<string, string> | null
  readonly priority: Priority
}

export const FileBatchMessage = {
  inputFileId: "'input_file_id' must be the id of a file uploaded with purpose 'batch'",
  endpoint: (sent: unknown) =>
    sent === undefined
      ? `'endpoint' is required with 'input_file_id': one of ${BatchEndpoints.join(", ")}`
      : `'endpoint' must be one of ${BatchEndpoints.join(", ")}`,
  requestsAndFile: "Send either 'requests' or 'input_file_id', not both",
  emptyLine: "is empty: every line of the file must be one request",
  notJson: "is not valid JSON: every line of the file must be one JSON object",
  noLines: (fileId: string) => `The file '${fileId}' holds no requests: it must hold at least one line`,
  tooManyLines: (fileId: string, limit: number) =>
    `The file '${fileId}' holds more than ${limit} requests, the limit of a batch; split it into several files`,
} as const

/** True when a create body asks for a batch from a file rather than carrying its rows. */
export const isFileBatchBody = (input: unknown): boolean => isObject(input) && input["input_file_id"] !== undefined && input["requests"] === undefined

/** The create body of a file-based batch; `completion_window` is ignored, as the seed says of every create. */
export const validateFileBatchRequest = (input: unknown, limits?: Partial<CreateLimits>): Either.Either<FileBatchRequest, CreateRejected> => {
  if (!isObject(input)) return Either.left(new CreateRejected({ message: FileBatchMessage.inputFileId, param: "input_file_id" }))
  const fileId = input["input_file_id"]
  if (typeof fileId !== "string" || fileId.length === 0) {
    return Either.left(new CreateRejected({ message: FileBatchMessage.inputFileId, param: "input_file_id" }))
  }
  const endpoint = input["endpoint"]
  if (!isBatchEndpoint(endpoint)) return Either.left(new CreateRejected({ message: FileBatchMessage.endpoint(endpoint), param: "endpoint" }))
  const metadata = validateMetadata(input["metadata"], createLimits(limits))
  if (Either.isLeft(metadata)) return Either.left(metadata.left)
  return Either.map(validatePriority(input["priority"]), (priority) => ({ inputFileId: fileId, endpoint, metadata: metadata.right, priority }))
}

export const fileLines: RowLabels = { name: (i) => `line ${i + 1}`, param: (i) => `line ${i + 1}` }

/**
 * A checker of one file's lines, in order: each line's row as stored, or the rejection naming the line.
 * It keeps the custom_ids seen so far, so one checker reads one pass over one file.
 */
export const fileLineChecker = (fileId: string, endpoint: BatchEndpoint, catalog: ModelAccess, limits?: Partial<CreateLimits>) => {
  const l = createLimits(limits)
  const seen = new Map<string, number>()
  let index = 0
  return (line: string): ValidRequest | CreateRejected => {
    const i = index++
    if (i >= l.maxRequests) return new CreateRejected({ message: FileBatchMessage.tooManyLines(fileId, l.maxRequests), param: "input_file_id" })
    if (line.trim().length === 0) return new CreateRejected({ message: `${fileLines.name(i)} ${FileBatchMessage.emptyLine}`, param: fileLines.param(i) })
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch {
      return new CreateRejected({ message: `${fileLines.name(i)} ${FileBatchMessage.notJson}`, param: fileLines.param(i) })
    }
    return validateBatchLine(value, i, fileLines, endpoint, catalog, l, seen)
  }
}
