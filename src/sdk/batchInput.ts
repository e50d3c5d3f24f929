import { Either } from "effect"
import { readFile } from "node:fs/promises"
import { type BatchFileRow, parseBatchFile, parseBatchRecords } from "../domain/jsonl/batchFileLines.js"
import { BatchInputError } from "./errors.js"

/** One request: a bare or OpenAI-style row with a body, or a content-only row that needs `model`. */
export type BatchRequest =
  | { readonly custom_id?: string; readonly method?: "POST"; readonly url?: string; readonly body: object }
  | { readonly custom_id?: string; readonly content: string }

export interface BatchInput {
  /** A JSONL file, one request per line. Give this or `requests`, not both. */
  readonly inputFile?: string
  /** The requests, each read by the same rules as a line of `inputFile` at its 1-based position. */
  readonly requests?: ReadonlyArray<BatchRequest>
  /** The model of every row: fills a body without one, and is required by content-only rows. */
  readonly model?: string
  readonly metadata?: Record<string, string>
}

/** The rows of `inputFile` or `requests`, checked by the JSONL rules; throws BatchInputError naming the line at fault. */
export const readBatchRows = async (input: BatchInput): Promise<ReadonlyArray<BatchFileRow>> => {
  if ((input.inputFile === undefined) === (input.requests === undefined)) {
    throw new BatchInputError("Give exactly one of inputFile and requests")
  }
  const options = input.model === undefined ? {} : { model: input.model }
  const source = input.inputFile === undefined ? "requests" : input.inputFile
  const parsed =
    input.inputFile === undefined
      ? parseBatchRecords(input.requests ?? [], options)
      : parseBatchFile(await readFile(input.inputFile, "utf8"), options)
  if (Either.isLeft(parsed)) throw new BatchInputError(`${source}: ${parsed.left.message}`, parsed.left.line)
  if (parsed.right.length === 0) throw new BatchInputError(`${source}: no rows to submit`)
  return parsed.right
}
