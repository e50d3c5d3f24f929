import type { ResultLine, RowErrorCode } from "../domain/api/index.js"
import type { PublicBatchEvent } from "../domain/batch/publicEvent.js"

export type BatchStreamEventType = PublicBatchEvent["type"]

/** An event's payload as `GET /v1/batches/{id}/events` sends it (see PublicBatchEvent). */
export type BatchStreamEventData<T extends BatchStreamEventType = BatchStreamEventType> = Extract<PublicBatchEvent, { readonly type: T }>

/** One event of a batch's stream: `id` is its cursor, for resuming after it with `lastEventId`. */
export type BatchStreamEvent = {
  readonly [T in BatchStreamEventType]: { readonly id: string; readonly type: T; readonly data: BatchStreamEventData<T> }
}[BatchStreamEventType]

const resultId = (row: number) => `batch_req_${row + 1}`

/** The result line a row outcome event stands for, as `GET /v1/batches/{id}/results` would list it; undefined for other events. */
export const resultLineFromEvent = (event: BatchStreamEvent): ResultLine | undefined => {
  switch (event.type) {
    case "row_completed":
      return { id: resultId(event.data.row), custom_id: event.data.custom_id, status: "completed", response: event.data.response, error: null }
    case "row_failed":
      return {
        id: resultId(event.data.row),
        custom_id: event.data.custom_id,
        status: "failed",
        response: null,
        error: { ...event.data.error, code: event.data.error.code as RowErrorCode },
      }
    case "row_cancelled": {
      const error = event.data.error
      return {
        id: resultId(event.data.row),
        custom_id: event.data.custom_id,
        status: "cancelled",
        response: null,
        error: error === null ? null : { ...error, code: error.code as RowErrorCode },
      }
    }
    default:
      return undefined
  }
}
