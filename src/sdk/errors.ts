import type { BatchObject, OpenAIErrorBody, RequestCounts } from "../domain/api/index.js"

type ErrorDetail = OpenAIErrorBody["error"]

/** An error answer from Sluice, with the fields of its OpenAI error envelope. */
export class SluiceApiError extends Error {
  override readonly name = "SluiceApiError"
  readonly status: number
  readonly type: string
  readonly code: string | null
  readonly param: string | null
  /** The server's own message, without the call it answered. */
  readonly detail: string

  constructor(status: number, detail: ErrorDetail, readonly method: string, readonly url: string) {
    super(`${method} ${url} answered ${status}: ${detail.message}`)
    this.detail = detail.message
    this.status = status
    this.type = detail.type
    this.code = detail.code
    this.param = detail.param
  }
}

/** The connection failed, every retry included. */
export class SluiceConnectionError extends Error {
  override readonly name = "SluiceConnectionError"
  constructor(readonly method: string, readonly url: string, cause: unknown) {
    super(`${method} ${url} failed: ${describeCause(cause)}`, { cause })
  }
}

/** An error and its cause in one line: fetch's `fetch failed` says little without its cause. */
export const describeCause = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error)
  const cause = error.cause
  return cause instanceof Error ? `${error.message} (${cause.message})` : error.message
}

/** The batch input cannot be submitted as given: no rows, a bad line, or more than one batch's worth for `submitBatch`. */
export class BatchInputError extends Error {
  override readonly name = "BatchInputError"
  constructor(message: string, readonly line?: number) {
    super(message)
  }
}

/** The results could not be written to the path given. */
export class ResultsFileError extends Error {
  override readonly name = "ResultsFileError"
  constructor(readonly path: string, reason: string, cause?: unknown) {
    super(`cannot write ${path}: ${reason}`, { cause })
  }
}

/** `submitBatches` failed part-way: the batches in `created` exist and run; the rest were not created. */
export class PartialSubmitError extends Error {
  override readonly name = "PartialSubmitError"
  constructor(readonly created: ReadonlyArray<BatchObject>, readonly total: number, cause: unknown) {
    super(
      `Created ${created.length} of ${total} batches (${created.map((b) => b.id).join(", ")}) before batch ${created.length + 1} failed: ` +
        `${cause instanceof Error ? cause.message : String(cause)}. Those batches run; resubmit only the rows of the batches not created.`,
      { cause },
    )
  }
}

const countsText = (c: RequestCounts) => `${c.completed + c.failed} of ${c.total} requests finished (${c.completed} completed, ${c.failed} failed)`

/** `waitForCompletion` gave up: the batch had not reached a final status within the timeout. */
export class WaitTimeoutError extends Error {
  override readonly name = "WaitTimeoutError"
  readonly batchId: string
  readonly status: BatchObject["status"]
  readonly requestCounts: RequestCounts

  constructor(readonly batch: BatchObject, readonly timeoutMs: number) {
    super(
      `Batch ${batch.id} did not finish within the timeout of ${timeoutMs} ms: it is still ${batch.status}, ` +
        `${countsText(batch.request_counts)}. Wait again, or pass a longer timeout to waitForCompletion.`,
    )
    this.batchId = batch.id
    this.status = batch.status
    this.requestCounts = batch.request_counts
  }
}

/** `submitToStream` stopped before every line was in the stream: those sent are, and a new call sends the rest. */
export class StreamSubmitError extends Error {
  override readonly name = "StreamSubmitError"
  /** Lines this call sent. */
  readonly sent: number
  /** Lines the stream held already. */
  readonly skipped: number
  /** The line the server refused, when one was. */
  readonly line: number | undefined

  constructor(message: string, details: { readonly sent: number; readonly skipped: number; readonly line?: number; readonly cause?: unknown }) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause })
    this.sent = details.sent
    this.skipped = details.skipped
    this.line = details.line
  }
}
