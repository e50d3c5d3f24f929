import type { BatchEvent, BatchEventType } from "./events.js"
import { onceOnlyTypes } from "./events.js"

/** The only place batch subjects are built: `batch.<batch_id>.<event type>`. */
export const batchSubject = (batchId: string, type: BatchEventType) => `batch.${batchId}.${type}`
export const oneBatch = (batchId: string) => `batch.${batchId}.>`
export const everyBatchEvent = "batch.>"
export const oneTypeAcrossBatches = (type: BatchEventType) => `batch.*.${type}`
/** A `row_bodies` subject: readers that have no use for request bodies skip these unread. */
export const isRowBodiesSubject = (subject: string) => subject.endsWith(".row_bodies")
/** Every `row_bodies` subject: what those readers ask the log to leave without data. */
export const everyRowBodies = oneTypeAcrossBatches("row_bodies")

/** Retried publishes of the same decision collapse to one stored event. */
export const batchMsgId = (event: BatchEvent): string => {
  if (onceOnlyTypes.has(event.type)) return `${event.batch_id}:${event.type}`
  switch (event.type) {
    case "rows_added":
      return `${event.batch_id}:rows:${event.first}`
    case "row_bodies":
      return `${event.batch_id}:bodies:${event.first}`
    case "row_started":
    case "row_retrying":
    case "row_completed":
    case "row_failed":
    case "row_cancelled":
      return `${event.batch_id}:${event.row}:${event.attempt}:${event.type}`
    default:
      return `${event.batch_id}:${event.type}`
  }
}
