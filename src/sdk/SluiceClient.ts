import { Either } from "effect"
import { randomUUID } from "node:crypto"
import type { BatchEstimate as BatchEstimateSchema } from "../domain/api/BatchEstimate.js"
import {
  type BatchDeleted,
  type BatchList,
  type BatchObject,
  FinalBatchStatuses,
  type ResultLine,
  type ResultsPage,
} from "../domain/api/index.js"
import type { BatchFileRow } from "../domain/jsonl/batchFileLines.js"
import { type SplitLimits, splitBatches } from "../domain/jsonl/splitBatches.js"
import { defaultRetryPolicy, type OnRetry, type RetryPolicy } from "./backoff.js"
import { inputKey } from "../domain/idempotency/inputKey.js"
import { type BatchInput, readBatchRows, readBatchSource } from "./batchInput.js"
import { type BatchEnvelope, createBody, envelopeBytes, serverBatchLimits } from "./batchLimits.js"
import type { Priority } from "../domain/scheduling/priority.js"
import type { BatchStreamEvent } from "./batchStreamEvent.js"
import { BatchInputError, PartialSubmitError, WaitTimeoutError } from "./errors.js"
import { followEventStream, type FollowOptions } from "./eventStream.js"
import {
  type BatchOutputLine,
  bodyBytes,
  type FileBatchRequest,
  type FileDeleted,
  type FileList,
  type FileObject,
  type FileUpload,
  fileBatchBody,
  jsonLines,
  type ListFilesOptions,
  uploadForm,
} from "./files.js"
import { checkResultsFolder, saveJsonl, type Written, writeJsonl } from "./jsonlDownload.js"
import type { CompletionEvent, CompletionEventList } from "../domain/api/CompletionEvent.js"
import { type IterResponsesEventsOptions, iterateResponsesEvents, type ResponsesEventsPageOptions } from "./responsesEvents.js"
import type { ResponseList, ResponseObject } from "../domain/api/ResponseObject.js"
import type { StreamDetail, StreamList, StreamSummary } from "../domain/api/StreamObject.js"
import type {
  ListResponsesOptions,
  ResponseCreateRequest,
  StreamCreateRequest,
  StreamInput,
  StreamPatch,
  StreamSubmission,
  StreamSubmitOptions,
} from "./responseTypes.js"
import { submitLines } from "./streamSubmit.js"
import { sleep, Transport } from "./transport.js"

export type Batch = BatchObject
export type BatchEstimate = typeof BatchEstimateSchema.Type

export const defaultBaseUrl = "http://127.0.0.1:8080/v1"

export interface SluiceClientOptions {
  /** Default: `SLUICE_API_KEY`. */
  readonly apiKey?: string
  /** The API's base URL, ending in `/v1`. Default: `SLUICE_BASE_URL`, else http://127.0.0.1:8080/v1. */
  readonly baseUrl?: string
  /**
   * Retries of a call answered 429 or 5xx, or whose connection failed; default 5. A create is
   * retried only after a 429, a 503 or a refused connection, when nothing can have been stored.
   */
  readonly maxRetries?: number
  /** The first retry's delay before jitter, doubling each retry; default 500 ms. */
  readonly retryBaseDelayMs?: number
  readonly fetch?: typeof fetch
  /** Called before each retry's wait, with why the call failed: a CLI says so at once instead of going quiet. */
  readonly onRetry?: OnRetry
  /** The most rows and bytes of one create call; default the server's own limits. */
  readonly batchLimits?: Partial<SplitLimits>
}

export interface RerunOptions {
  /** Rows in these statuses run again; default failed, expired and cancelled. */
  readonly statuses?: ReadonlyArray<"completed" | "failed" | "expired" | "cancelled">
  /** Only rows whose error has one of these codes. */
  readonly errorCodes?: ReadonlyArray<string>
  /** The new batch's metadata; default the original's. */
  readonly metadata?: Record<string, string>
  /** The new batch's priority; default the original's. */
  readonly priority?: Priority
}

export interface WaitOptions {
  /** ms between polls; default 5000. */
  readonly pollInterval?: number
  /** ms to wait in all before throwing WaitTimeoutError; default 30000. */
  readonly timeout?: number
  readonly onProgress?: (batch: Batch) => void
  readonly signal?: AbortSignal
}

export interface SubmitOnceOptions {
  /** Called with each batch as it is answered; `resumed` when an earlier call with the same input had created it. */
  readonly onSubmitted?: (batch: Batch, resumed: boolean) => void
  readonly signal?: AbortSignal
}

export interface RunOptions extends SubmitOnceOptions {
  /** ms between polls while a batch runs; default 5000. */
  readonly pollInterval?: number
  /** Called with each poll's batch, the final one included: how a caller learns how each batch ended. */
  readonly onProgress?: (batch: Batch) => void
}

const batchPath = (id: string) => `/batches/${encodeURIComponent(id)}`
const responsePath = (id: string) => `/responses/${encodeURIComponent(id)}`
const streamPath = (id: string) => `/streams/${encodeURIComponent(id)}`
const filePath = (id: string) => `/files/${encodeURIComponent(id)}`

export const retryPolicyOf = (options: { readonly maxRetries?: number; readonly retryBaseDelayMs?: number }): RetryPolicy => ({
  ...defaultRetryPolicy,
  ...(options.maxRetries === undefined ? {} : { maxRetries: options.maxRetries }),
  ...(options.retryBaseDelayMs === undefined ? {} : { baseDelayMs: options.retryBaseDelayMs }),
})

export const trimSlash = (url: string) => url.replace(/\/+$/, "")

/** A client of one Sluice server's batch API, authenticated by one API key. */
export class SluiceClient {
  private readonly transport: Transport
  private readonly retry: RetryPolicy
  private readonly limits: SplitLimits
  private readonly onRetry: OnRetry | undefined

  constructor(options: SluiceClientOptions = {}) {
    const apiKey = options.apiKey ?? process.env["SLUICE_API_KEY"]
    if (apiKey === undefined || apiKey === "") {
      throw new Error("SluiceClient needs an API key: pass { apiKey } or set SLUICE_API_KEY")
    }
    this.retry = retryPolicyOf(options)
    this.limits = { ...serverBatchLimits, ...options.batchLimits }
    this.onRetry = options.onRetry
    this.transport = new Transport({
      baseUrl: trimSlash(options.baseUrl ?? process.env["SLUICE_BASE_URL"] ?? defaultBaseUrl),
      token: apiKey,
      retry: this.retry,
      fetch: options.fetch ?? globalThis.fetch,
      ...(options.onRetry === undefined ? {} : { onRetry: options.onRetry }),
    })
  }

  /** Submits the rows as one batch; throws BatchInputError if they need more than one (use `submitBatches`). */
  async submitBatch(input: BatchInput): Promise<Batch> {
    const parts = await this.parts(input)
    const [only] = parts
    if (only === undefined || parts.length > 1) {
      const rows = parts.reduce((n, part) => n + part.length, 0)
      throw new BatchInputError(
        `The ${rows} rows need ${parts.length} batches (at most ${this.limits.maxRows} rows and ${this.limits.maxBodyBytes} bytes each); use submitBatches to submit them as several`,
      )
    }
    return this.create(only, input)
  }

  /** Submits the rows as as few batches as the create limits allow, in order. */
  async submitBatches(input: BatchInput): Promise<ReadonlyArray<Batch>> {
    const parts = await this.parts(input)
    const created: Array<Batch> = []
    for (const part of parts) {
      try {
        created.push(await this.create(part, input))
      } catch (error) {
        if (created.length === 0) throw error
        throw new PartialSubmitError(created, parts.length, error)
      }
    }
    return created
  }

  /**
   * Submits the rows as `submitBatches` does, each batch's Idempotency-Key derived from the input: the
   * SHA-256 of the file's bytes (or of the requests as JSON), `model`, `metadata` and the batch's place
   * in the split. The same input submitted again while the server keeps the keys (24 hours) answers the
   * batches the first call created, as they are now, and creates nothing; a different input or option
   * makes new batches. A failure part-way throws the call's error: calling again finds the batches made.
   */
  async submitBatchesOnce(input: BatchInput, options: SubmitOnceOptions = {}): Promise<ReadonlyArray<Batch>> {
    const { rows, sha256 } = await readBatchSource(input)
    const parts = this.split(rows, input)
    const batches: Array<Batch> = []
    for (const [part, partRows] of parts.entries()) {
      const key = inputKey({ inputSha256: sha256, model: input.model, metadata: input.metadata, priority: input.priority, part, parts: parts.length })
      const response = await this.transport.send("POST", "/batches", {
        body: createBody(partRows, input),
        headers: { "idempotency-key": key },
        mode: "keyed",
        signal: options.signal,
      })
      const batch = (await response.json()) as Batch
      options.onSubmitted?.(batch, response.headers.get("idempotent-replayed") === "true")
      batches.push(batch)
    }
    return batches
  }

  /**
   * `submitBatchesOnce`, then each batch's result lines in order once it is final (`waitForCompletion`
   * with no timeout): a run stopped part-way and started again with the same input follows the same
   * batches, and no row runs twice.
   */
  async *runBatches(input: BatchInput, options: RunOptions = {}): AsyncIterableIterator<ResultLine> {
    const batches = await this.submitBatchesOnce(input, options)
    for (const batch of batches) {
      await this.waitForCompletion(batch.id, {
        timeout: Number.POSITIVE_INFINITY,
        ...(options.pollInterval === undefined ? {} : { pollInterval: options.pollInterval }),
        ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      })
      yield* this.results(batch.id)
    }
  }

  /**
   * What submitting the rows as one batch would cost and when it would finish
   * (`POST /v1/batches/estimate`): validated as a create, stored nowhere. From an uploaded file too
   * (`{ input_file_id, endpoint }`), its lines checked as `createBatch` would check them.
   */
  async estimate(input: BatchInput | FileBatchRequest): Promise<BatchEstimate> {
    if ("input_file_id" in input) {
      return this.transport.json<BatchEstimate>("POST", "/batches/estimate", { body: fileBatchBody(input), mode: "idempotent" })
    }
    const parts = await this.parts(input)
    const [only] = parts
    if (only === undefined || parts.length > 1) {
      throw new BatchInputError(`The rows need ${parts.length} batches; use estimateBatches to estimate each of them`)
    }
    return this.estimateOne(only, input)
  }

  /** `estimate` for each batch `submitBatches` would create, in order. */
  async estimateBatches(input: BatchInput): Promise<ReadonlyArray<BatchEstimate>> {
    const estimates: Array<BatchEstimate> = []
    for (const part of await this.parts(input)) estimates.push(await this.estimateOne(part, input))
    return estimates
  }

  private estimateOne(rows: ReadonlyArray<BatchFileRow>, envelope: BatchEnvelope): Promise<BatchEstimate> {
    return this.transport.json<BatchEstimate>("POST", "/batches/estimate", { body: createBody(rows, envelope), mode: "idempotent" })
  }

  getBatch(id: string): Promise<Batch> {
    return this.transport.json<Batch>("GET", batchPath(id))
  }

  /** Polls the batch until its status is final (completed, failed, expired or cancelled). */
  async waitForCompletion(id: string, options: WaitOptions = {}): Promise<Batch> {
    const pollInterval = options.pollInterval ?? 5_000
    const timeout = options.timeout ?? 30_000
    const deadline = Date.now() + timeout
    for (;;) {
      const batch = await this.transport.json<Batch>("GET", batchPath(id), { signal: options.signal })
      options.onProgress?.(batch)
      if (FinalBatchStatuses.has(batch.status)) return batch
      const left = deadline - Date.now()
      if (left <= 0) throw new WaitTimeoutError(batch, timeout)
      await sleep(Math.min(pollInterval, left), options.signal)
    }
  }

  /** Every result line of the batch, in submission order, a page at a time. */
  async *results(id: string, options: { readonly pageSize?: number } = {}): AsyncIterableIterator<ResultLine> {
    let after: string | undefined
    for (;;) {
      const page = await this.transport.json<ResultsPage>("GET", `${batchPath(id)}/results`, {
        query: { limit: options.pageSize ?? 1000, after },
      })
      yield* page.data
      if (!page.has_more || page.last_id === null) return
      after = page.last_id
    }
  }

  /**
   * Streams `GET /v1/batches/{id}/results.jsonl` to `out`: a path, written through a temporary file
   * renamed into place when whole, or a stream such as `process.stdout`, which is left open.
   */
  async downloadResultsJsonl(id: string, options: { readonly out: string | NodeJS.WritableStream }): Promise<Written> {
    const { out } = options
    if (typeof out === "string") await checkResultsFolder(out)
    const response = await this.transport.send("GET", `${batchPath(id)}/results.jsonl`, {
      headers: { accept: "application/x-ndjson" },
    })
    return typeof out === "string" ? saveJsonl(response, out) : writeJsonl(response, out)
  }

  /**
   * Creates a batch: from an uploaded file (`{ input_file_id, endpoint, metadata? }`, OpenAI's body), or
   * from inline rows as `submitBatch` does. Either carries a fresh Idempotency-Key, so its retries store one batch.
   */
  createBatch(request: FileBatchRequest | BatchInput): Promise<Batch> {
    if (!("input_file_id" in request)) return this.submitBatch(request)
    const body = fileBatchBody(request)
    return this.transport.json<Batch>("POST", "/batches", { body, headers: { "idempotency-key": randomUUID() }, mode: "keyed" })
  }

  /**
   * `POST /v1/files`: a path is streamed from disk as it is sent, never read whole. Retried only when
   * nothing can have been stored (a 429, a 503, a refused connection).
   */
  async uploadFile(upload: FileUpload): Promise<FileObject> {
    const form = await uploadForm(upload)
    return this.transport.json<FileObject>("POST", "/files", { form, mode: "create", signal: upload.signal })
  }

  /** Every file of this key's account (uploads and batches' output and error files), newest first unless `order: "asc"`, a page of `limit` at a time. */
  async *listFiles(options: ListFilesOptions = {}): AsyncIterableIterator<FileObject> {
    let after: string | undefined
    for (;;) {
      const query = { limit: options.limit ?? 100, after, purpose: options.purpose, order: options.order }
      const page = await this.transport.json<FileList>("GET", "/files", { query })
      yield* page.data
      if (!page.has_more || page.last_id === null) return
      after = page.last_id
    }
  }

  getFile(id: string): Promise<FileObject> {
    return this.transport.json<FileObject>("GET", filePath(id))
  }

  /** Deletes an uploaded file; a batch already made from it keeps its rows. A batch's output or error file goes with its batch. */
  deleteFile(id: string): Promise<FileDeleted> {
    return this.transport.json<FileDeleted>("DELETE", filePath(id))
  }

  /** The file's bytes as the server streams them: break out of the loop and the rest is not downloaded. */
  async *fileContent(id: string, options: { readonly signal?: AbortSignal } = {}): AsyncIterableIterator<Uint8Array> {
    const path = `${filePath(id)}/content`
    const response = await this.transport.send("GET", path, { headers: { accept: "application/octet-stream" }, signal: options.signal })
    yield* bodyBytes(response, "GET", this.transport.url(path))
  }

  /** Each line of a batch's output or error file, parsed (`BatchOutputLine`), as the file streams; any JSONL file's lines with a type of your own. */
  outputLines<T = BatchOutputLine>(fileId: string, options: { readonly signal?: AbortSignal } = {}): AsyncIterableIterator<T> {
    return jsonLines<T>(this.fileContent(fileId, options), fileId)
  }

  /** Streams the file's content to `out`, as `downloadResultsJsonl` does: a path written whole or not at all, or a stream left open. */
  async downloadFile(id: string, options: { readonly out: string | NodeJS.WritableStream }): Promise<Written> {
    const { out } = options
    if (typeof out === "string") await checkResultsFolder(out)
    const response = await this.transport.send("GET", `${filePath(id)}/content`, { headers: { accept: "application/octet-stream" } })
    return typeof out === "string" ? saveJsonl(response, out) : writeJsonl(response, out)
  }

  /**
   * The batch's events as they happen (`GET /v1/batches/{id}/events`), from after `lastEventId` if
   * given. A dropped connection is resumed with `Last-Event-ID`; the iteration ends when the server
   * ends the stream, once the batch is done.
   */
  streamEvents(id: string, options: FollowOptions = {}): AsyncIterableIterator<BatchStreamEvent> {
    const path = `${batchPath(id)}/events`
    const connect = (lastEventId: string | undefined) =>
      this.transport.send("GET", path, {
        headers: { accept: "text/event-stream", ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }) },
        signal: options.signal,
      })
    return followEventStream(connect, this.transport.url(path), this.retry, options, this.onRetry)
  }

  /** One page of the completion-events feed (`GET /v1/responses/events`). */
  listResponsesEvents(options: ResponsesEventsPageOptions = {}): Promise<CompletionEventList> {
    const query = {
      stream_id: options.streamId,
      limit: options.limit,
      starting_after: options.startingAfter,
      ending_before: options.endingBefore,
      wait_ms: options.waitMs,
    }
    return this.transport.json<CompletionEventList>("GET", "/responses/events", { query, signal: options.signal })
  }

  /**
   * The completion events in order, resuming a named consumer from its checkpoint (or starting with the
   * newest page), each saved once the next is asked for; with `follow`, long-polls for new ones until
   * the loop ends or `signal` aborts.
   */
  iterResponsesEvents(options: IterResponsesEventsOptions = {}): AsyncIterableIterator<CompletionEvent> {
    return iterateResponsesEvents((page) => this.listResponsesEvents(page), this.transport.url(""), options)
  }

  /**
   * `POST /v1/responses`. Without `background` it answers once the model has, with the finished
   * Response; with `background: true`, or naming a stream in `metadata.stream_id`, it answers at once,
   * `in_progress`, and the response waits for a batch slot. Retried only when nothing can have been
   * stored (a 429, a 503, a refused connection): the server keeps no key for a response.
   */
  createResponse(request: ResponseCreateRequest, options: { readonly signal?: AbortSignal } = {}): Promise<ResponseObject> {
    return this.transport.json<ResponseObject>("POST", "/responses", { body: request, mode: "create", signal: options.signal })
  }

  /** A queued response (a background one, a stream's item), as it is now. */
  getResponse(id: string): Promise<ResponseObject> {
    return this.transport.json<ResponseObject>("GET", responsePath(id))
  }

  /** Cancels a response still waiting to start; one running stays `in_progress` until its call ends. A final one is answered unchanged. */
  cancelResponse(id: string): Promise<ResponseObject> {
    return this.transport.json<ResponseObject>("POST", `${responsePath(id)}/cancel`)
  }

  /** Every queued response of this key's account (or of one stream), newest first, a page of `limit` at a time. */
  async *listResponses(options: ListResponsesOptions = {}): AsyncIterableIterator<ResponseObject> {
    let after: string | undefined
    for (;;) {
      const query = { limit: options.limit ?? 100, after, stream_id: options.streamId }
      const page = await this.transport.json<ResponseList>("GET", "/responses", { query })
      yield* page.data
      if (!page.has_more || page.last_id === null) return
      after = page.last_id
    }
  }

  /** A new stream, open, its window (how long each item may wait to start) 24h unless given. */
  createStream(request: StreamCreateRequest): Promise<StreamDetail> {
    return this.transport.json<StreamDetail>("POST", "/streams", { body: request, mode: "create" })
  }

  /** Every stream of this key's account, without counters (`getStream` has them). */
  async listStreams(): Promise<ReadonlyArray<StreamSummary>> {
    return (await this.transport.json<StreamList>("GET", "/streams")).items
  }

  /** The stream with its item counters and token totals. */
  getStream(id: string): Promise<StreamDetail> {
    return this.transport.json<StreamDetail>("GET", streamPath(id))
  }

  /** Renames the stream, or closes it; the same patch twice changes nothing more, and nothing reopens. */
  updateStream(id: string, patch: StreamPatch): Promise<StreamDetail> {
    return this.transport.json<StreamDetail>("PATCH", streamPath(id), { body: patch })
  }

  /** No new items; those not yet started are cancelled, running ones finish. */
  cancelStream(id: string): Promise<StreamDetail> {
    return this.updateStream(id, { status: "cancelled" })
  }

  /** Closed for good (and purged, with its items' history, once its retention ends). */
  archiveStream(id: string): Promise<StreamDetail> {
    return this.updateStream(id, { status: "archived" })
  }

  /**
   * Sends each line of the input (read as `submitBatch` reads it) as a response of the stream, its
   * `metadata.custom_id` the line's custom_id (`line-<n>` when it has none), `concurrency` at a time.
   * A chat-shaped body's messages become the request's input items. Lines whose custom_id the stream
   * already holds are skipped, so a call run again after an interruption sends only what is missing.
   * Throws `StreamSubmitError` when the server refuses a line, after the lines in flight are answered.
   */
  submitToStream(streamId: string, input: StreamInput, options: StreamSubmitOptions = {}): Promise<StreamSubmission> {
    const calls = {
      getStream: (id: string) => this.getStream(id),
      customIds: async (id: string) => {
        const ids = new Set<string>()
        for await (const response of this.listResponses({ streamId: id })) {
          const customId = response.metadata["custom_id"]
          if (customId !== undefined) ids.add(customId)
        }
        return ids
      },
      create: (body: Record<string, unknown>, signal: AbortSignal | undefined) =>
        this.transport.json<ResponseObject>("POST", "/responses", { body, mode: "create", signal }),
    }
    return submitLines(calls, streamId, input, options)
  }

  cancel(id: string): Promise<Batch> {
    return this.transport.json<Batch>("POST", `${batchPath(id)}/cancel`)
  }

  delete(id: string): Promise<BatchDeleted> {
    return this.transport.json<BatchDeleted>("DELETE", batchPath(id))
  }

  /** Every batch of this key's account, newest first, a page of `limit` at a time. */
  async *list(options: { readonly limit?: number } = {}): AsyncIterableIterator<Batch> {
    let after: string | undefined
    for (;;) {
      const page = await this.transport.json<BatchList>("GET", "/batches", { query: { limit: options.limit ?? 100, after } })
      yield* page.data
      if (!page.has_more || page.last_id === null) return
      after = page.last_id
    }
  }

  private async parts(input: BatchInput): Promise<ReadonlyArray<ReadonlyArray<BatchFileRow>>> {
    return this.split(await readBatchRows(input), input)
  }

  private split(rows: ReadonlyArray<BatchFileRow>, envelope: BatchEnvelope) {
    const split = splitBatches(rows, { ...this.limits, envelopeBytes: envelopeBytes(envelope) })
    if (Either.isLeft(split)) throw new BatchInputError(split.left.message)
    return split.right
  }

  /**
   * A new batch of the rows of a final batch that did not complete (`POST /v1/batches/{id}/rerun`):
   * by default those failed, expired or cancelled, with the same custom_ids, bodies and order.
   */
  rerun(id: string, options: RerunOptions = {}): Promise<Batch> {
    const body = {
      ...(options.statuses === undefined ? {} : { statuses: options.statuses }),
      ...(options.errorCodes === undefined ? {} : { error_codes: options.errorCodes }),
      ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
      ...(options.priority === undefined ? {} : { priority: options.priority }),
    }
    return this.transport.json<Batch>("POST", `${batchPath(id)}/rerun`, { body, mode: "create" })
  }

  /** Every create carries a fresh Idempotency-Key, so its retries, even after a reset, store one batch. */
  private create(rows: ReadonlyArray<BatchFileRow>, envelope: BatchEnvelope): Promise<Batch> {
    return this.transport.json<Batch>("POST", "/batches", {
      body: createBody(rows, envelope),
      headers: { "idempotency-key": randomUUID() },
      mode: "keyed",
    })
  }
}
