import { Either } from "effect"
import { createHash } from "node:crypto"
import { readFile } from "node:fs/promises"
import { type BatchFileRow, parseBatchFile, parseBatchRecords } from "../domain/jsonl/batchFileLines.js"
import { BatchInputError } from "./errors.js"
import type { Priority } from "../domain/scheduling/priority.js"

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
  /** The batches' priority on their models; default standard. More than the account's `max_priority` is refused (403). */
  readonly priority?: Priority
}

export interface BatchSource {
  readonly rows: ReadonlyArray<BatchFileRow>
  /** Hex SHA-256 of the file's bytes, or of the requests as JSON: what the rows were read from. */
  readonly sha256: string
  /** Each row's line in the file (its 1-based place among `requests`), for messages that name it. */
  readonly lines: ReadonlyArray<number>
  /** The file's path, or `requests`. */
  readonly source: string
}

/** The lines parseBatchFile makes rows of: every line that is not blank. */
const rowLines = (text: string): Array<number> => text.split("\n").flatMap((line, i) => (line.trim().length === 0 ? [] : [i + 1]))

/** The rows of `inputFile` or `requests`, checked by the JSONL rules, and the digest of what they were read from (read once). */
export const readBatchSource = async (input: BatchInput): Promise<BatchSource> => {
  if ((input.inputFile === undefined) === (input.requests === undefined)) {
    throw new BatchInputError("Give exactly one of inputFile and requests")
  }
  const options = input.model === undefined ? {} : { model: input.model }
  const source = input.inputFile === undefined ? "requests" : input.inputFile
  const bytes = input.inputFile === undefined ? Buffer.from(JSON.stringify(input.requests ?? []), "utf8") : await readFile(input.inputFile)
  const text = input.inputFile === undefined ? undefined : bytes.toString("utf8")
  const parsed = text === undefined ? parseBatchRecords(input.requests ?? [], options) : parseBatchFile(text, options)
  if (Either.isLeft(parsed)) throw new BatchInputError(`${source}: ${parsed.left.message}`, parsed.left.line)
  if (parsed.right.length === 0) throw new BatchInputError(`${source}: no rows to submit`)
  const lines = text === undefined ? parsed.right.map((_, i) => i + 1) : rowLines(text)
  return { rows: parsed.right, sha256: createHash("sha256").update(bytes).digest("hex"), lines, source }
}

/** The rows of `inputFile` or `requests`, checked by the JSONL rules; throws BatchInputError naming the line at fault. */
export const readBatchRows = async (input: BatchInput): Promise<ReadonlyArray<BatchFileRow>> => (await readBatchSource(input)).rows
