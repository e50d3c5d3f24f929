import { createHash } from "node:crypto"
import type { BatchEvent, BatchEventType } from "./events.js"
import { onceOnlyTypes } from "./events.js"

/** A response's id: it runs as a one-row batch (src/domain/response) whose events are on its own subjects. */
export const RESPONSE_ID_PREFIX = "resp_"
export const isResponseId = (id: string) => id.startsWith(RESPONSE_ID_PREFIX)
/**
 * The aggregate a batch-shaped id's events belong to: `batch`, or `response` for a response. Subject
 * consumers take one kind with one filter (`batch.>`, `response.>`); everything else is the same.
 */
export const rootOf = (id: string) => (isResponseId(id) ? "response" : "batch")
/** Every root a batch-shaped aggregate's subjects start with. */
export const batchShapedRoots = ["batch", "response"] as const

/** The only place batch subjects are built: `batch.<batch_id>.<event type>` (`response.<id>.…` for a response). */
export const batchSubject = (batchId: string, type: BatchEventType) => `${rootOf(batchId)}.${batchId}.${type}`
// Asked for twice a window (its subject and its id), and the hash showed in B13's profiles; models are few.
const laneTokens = new Map<string, string>()
/**
 * A model as one subject token: its id with what a subject may not hold replaced, and a short hash of the
 * id so that two ids made alike stay apart.
 */
export const laneToken = (model: string) => {
  let token = laneTokens.get(model)
  if (token === undefined) {
    token = `${model.replace(/[^A-Za-z0-9_-]/g, "_")}_${createHash("sha256").update(model).digest("hex").slice(0, 8)}`
    laneTokens.set(model, token)
  }
  return token
}
/** Where a model's row events of a batch go, in windows written by the model's lease owner. */
export const laneSubject = (batchId: string, model: string) => `${rootOf(batchId)}.${batchId}.lane.${laneToken(model)}`
export const isLaneSubject = (subject: string) => subject.split(".", 4)[2] === "lane"
/**
 * The subjects an API call writes that another instance's reads must show once the call has answered:
 * every aggregate's `<kind>.<id>.<type>` (a create's bodies and an upload's parts among them, each
 * followed by the event that commits it). Not a lane's windows, four tokens, which only the model's
 * lease owner writes (BatchWriter refuses row events decided without a lane), nor the idempotency
 * records, two, which only a create reads, waiting for them itself.
 */
export const writtenByCalls = "*.*.*"
/**
 * A lane window's message id: its place on the lane (the seq it is appended on), the lane, the lease it
 * was written under and the window's number among those its writer made. The place comes first so that
 * new ids sort near each other: the embedded log's unique index on them then takes a commit's windows of
 * many batches in a page or two. The number keeps two windows apart that one lease built on one place:
 * the log would store the first and answer the second as its duplicate, its events never written.
 */
export const laneMsgId = (batchId: string, model: string, lease: number, n: number, window: number) =>
  `lane:${n}:${batchId}:${laneToken(model)}:${lease}:${window}`
export const oneBatch = (batchId: string) => `${rootOf(batchId)}.${batchId}.>`
export const everyBatchEvent = "batch.>"
export const oneTypeAcrossBatches = (type: BatchEventType) => `batch.*.${type}`
/** A `row_bodies` subject: readers that have no use for request bodies skip these unread. */
export const isRowBodiesSubject = (subject: string) => subject.endsWith(".row_bodies")
/** What those readers ask the log for (its ReadOptions): every `row_bodies` subject, batches' and responses', left without data. */
export const withoutRowBodies = { withoutDataOn: "*.*.row_bodies" } as const
/** What the projections and the writer read: no request bodies and no headers, only the events. */
export const eventsOnly = { ...withoutRowBodies, withoutHeaders: true } as const

/** A chunk of a batch's input rows: its `row_bodies` or `rows_added` event, by the chunk's first row. */
export const chunkMsgId = (batchId: string, type: "row_bodies" | "rows_added", first: number) =>
  `${batchId}:${type === "row_bodies" ? "bodies" : "rows"}:${first}`

/** Retried publishes of the same decision collapse to one stored event. */
export const batchMsgId = (event: BatchEvent): string => {
  if (onceOnlyTypes.has(event.type)) return `${event.batch_id}:${event.type}`
  switch (event.type) {
    case "rows_added":
    case "row_bodies":
      return chunkMsgId(event.batch_id, event.type, event.first)
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
