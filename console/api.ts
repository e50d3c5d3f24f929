import type { BatchUsage } from "../src/domain/api/BatchObject.js"
import type { BatchProgress } from "../src/domain/api/BatchProgress.js"
import type { BatchStatus } from "../src/domain/api/BatchStatus.js"
import type { ResponseObject } from "../src/domain/api/ResponseObject.js"
import { SseDecoder, type SseMessage } from "../src/sdk/sseDecoder.js"

export type { BatchProgress, BatchUsage, ResponseObject }

/** An answer other than 2xx, with the message of Sluice's OpenAI-shaped error envelope. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

const messageOf = async (response: Response) => {
  const text = await response.text()
  try {
    const body = JSON.parse(text) as { error?: { message?: string } }
    return body.error?.message ?? text
  } catch {
    return text === "" ? response.statusText : text
  }
}

export const call = async <T>(token: string | null, method: string, path: string): Promise<T> => {
  let response: Response
  try {
    response = await fetch(path, { method, headers: token === null ? {} : { authorization: `Bearer ${token}` } })
  } catch (error) {
    throw new ApiError(0, `Sluice could not be reached: ${String(error)}`)
  }
  if (!response.ok) throw new ApiError(response.status, await messageOf(response))
  return (await response.json()) as T
}

/** Why unfinished work is not running at full speed (docs/operations.md, waiting_on). */
export interface WaitingOn {
  readonly reason: string
  /** Unix seconds. */
  readonly since: number
  readonly detail: string
  readonly model?: string
  readonly retry_after_s?: number
  readonly until?: number
  readonly next_retry_at?: number
}

export interface Batch {
  readonly id: string
  readonly status: string
  readonly endpoint: string
  readonly input_file_id: string | null
  readonly output_file_id: string | null
  readonly error_file_id: string | null
  readonly created_at: number
  readonly completed_at: number | null
  readonly cost_usd?: number
  readonly request_counts: { readonly total: number; readonly completed: number; readonly failed: number }
  readonly metadata: Record<string, string> | null
  readonly priority: string
  readonly rows_ahead?: number | null
  readonly estimated_completion_at?: number | null
  readonly usage: BatchUsage
  /** Absent from a server without it. */
  readonly waiting_on?: WaitingOn | null
}

/** OpenAI's File object: an upload, or a batch's output or error file. */
export interface FileObject {
  readonly id: string
  readonly bytes: number
  readonly filename: string
  readonly purpose: string
}

/** A file's content, fetched with the key: a plain link could not send it. */
export const fileContent = async (token: string, fileId: string): Promise<Blob> => {
  let response: Response
  try {
    response = await fetch(`/v1/files/${encodeURIComponent(fileId)}/content`, { headers: { authorization: `Bearer ${token}` } })
  } catch (error) {
    throw new ApiError(0, `Sluice could not be reached: ${String(error)}`)
  }
  if (!response.ok) throw new ApiError(response.status, await messageOf(response))
  return response.blob()
}

export interface Page<T> {
  readonly data: ReadonlyArray<T>
  readonly has_more: boolean
  readonly last_id: string | null
}

export interface ResultLine {
  readonly id: string
  readonly custom_id: string
  readonly status: string
  readonly response: unknown
  readonly error: { readonly code: string; readonly message: string } | null
}

/** `GET /v1/streams` lists these; the counters come with each stream's own `GET /v1/streams/{id}`. */
export interface StreamSummary {
  readonly id: string
  readonly name: string
  readonly window: string
  readonly status: string
  readonly priority: string
  /** ISO-8601, as sference's clients expect a stream's times. */
  readonly created_at: string
  readonly updated_at: string
}

export interface StreamDetail extends StreamSummary {
  readonly cancelled_at: string | null
  readonly archived_at: string | null
  readonly total_items: number
  readonly pending_items: number
  readonly running_items: number
  readonly waiting_on?: WaitingOn | null
  readonly completed_items: number
  readonly failed_items: number
  readonly cancelled_items: number
  readonly completion_ratio: number
  readonly total_prompt_tokens: number
  readonly total_completion_tokens: number
  readonly total_tokens: number
  readonly last_completion_at: string | null
}

/** The domain's FinalBatchStatuses, spelled again: importing that module would bundle effect's Schema into the page. */
export const finalStatuses: ReadonlySet<string> = new Set(["completed", "failed", "expired", "cancelled"] satisfies ReadonlyArray<BatchStatus>)

/**
 * The batch's events stream, read with fetch (an EventSource cannot send the key as a header),
 * until the server ends it or `signal` aborts it.
 */
export const streamEvents = async (token: string, batchId: string, onEvent: (m: SseMessage) => void, signal: AbortSignal) => {
  const response = await fetch(`/v1/batches/${batchId}/events`, { headers: { authorization: `Bearer ${token}` }, signal })
  if (!response.ok || response.body === null) throw new ApiError(response.status, await messageOf(response))
  const decoder = new SseDecoder()
  const text = new TextDecoder()
  const reader = response.body.getReader()
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    for (const message of decoder.push(text.decode(value, { stream: true }))) onEvent(message)
  }
}
