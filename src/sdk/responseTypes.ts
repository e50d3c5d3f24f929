import type { ResponseObject } from "../domain/api/ResponseObject.js"
import type { StreamWindow } from "../domain/stream/events.js"
import type { Priority } from "../domain/scheduling/priority.js"
import type { BatchInput } from "./batchInput.js"

export type { ResponseList, ResponseObject, ResponseStatus, ResponseUsage } from "../domain/api/ResponseObject.js"
export type { StreamDetail, StreamList, StreamSummary } from "../domain/api/StreamObject.js"
export type { StreamWindow } from "../domain/stream/events.js"
export type { Priority } from "../domain/scheduling/priority.js"

/** One item of a Responses request's `input`: a message, a function call the model made, or its output. */
export type ResponseInputItem =
  | { readonly type?: "message"; readonly role: "user" | "assistant" | "system" | "developer"; readonly content: string | ReadonlyArray<object> }
  | { readonly type: "function_call"; readonly call_id: string; readonly name: string; readonly arguments: string }
  | { readonly type: "function_call_output"; readonly call_id: string; readonly output: string }

/** `POST /v1/responses`'s body; other fields (`seed`, `reasoning`, `text`, …) are sent as they are. */
export interface ResponseCreateRequest {
  readonly model: string
  readonly input: string | ReadonlyArray<ResponseInputItem>
  readonly instructions?: string
  readonly max_output_tokens?: number
  readonly temperature?: number
  readonly top_p?: number
  readonly tools?: ReadonlyArray<object>
  readonly tool_choice?: unknown
  /** `stream_id` makes it an item of that stream, `custom_id` names it in its completion event. */
  readonly metadata?: Record<string, string>
  /** Answered at once, `in_progress`, and run on a batch slot. */
  readonly background?: boolean
  /** `flex` waits for a batch slot, at most `max_queue_wait_s` seconds; the others are served at once. */
  readonly service_tier?: "auto" | "default" | "flex" | "scale" | "priority"
  readonly max_queue_wait_s?: number
  /**
   * A queued response's priority among its model's queued work: a background one's (default standard), a
   * stream item's (default the stream's). A flex or interactive request naming another than standard is refused.
   */
  readonly priority?: Priority
  readonly [field: string]: unknown
}

export interface ListResponsesOptions {
  /** Only this stream's items; without it, the queued responses outside streams too. */
  readonly streamId?: string
  /** Responses asked for per call, 1 to 100; default 100. */
  readonly limit?: number
}

export interface StreamCreateRequest {
  readonly name: string
  /** How long each item may wait to start; default 24h. */
  readonly window?: StreamWindow
  /** Its items' priority unless an item names its own; default standard. */
  readonly priority?: Priority
}

export interface StreamPatch {
  readonly name?: string
  /** `cancelled`: no new items, those not yet started cancelled; `archived`: closed for good. */
  readonly status?: "cancelled" | "archived"
}

/** What `submitToStream` sends: batch lines, read as `submitBatch` reads them; `metadata` and `priority` go onto each response (without one, each takes the stream's). */
export type StreamInput = BatchInput

export interface StreamSubmitOptions {
  /** Lines sent at once; default 8. */
  readonly concurrency?: number
  /** Told, before anything is sent, how many lines the input has and how many of them the stream holds already. */
  readonly onPlanned?: (plan: { readonly lines: number; readonly skipped: number }) => void
  /** Told of each line's response as the server answers it. */
  readonly onSent?: (response: ResponseObject, customId: string) => void
  readonly signal?: AbortSignal
}

export interface StreamSubmission {
  readonly streamId: string
  /** Lines in the input. */
  readonly lines: number
  /** Lines whose custom_id the stream held already: not sent again. */
  readonly skipped: number
  /** Lines sent by this call. */
  readonly sent: number
}
