import { Schema } from "effect"
import { StreamWindow } from "../stream/events.js"
import { Priority } from "../scheduling/priority.js"
import { WaitingOn } from "../waiting/waitingOn.js"

/* sference's stream shapes (`StreamListResponse` and its items, `StreamDetailResponse`): times as ISO-8601 strings, counters never null. */

const IsoTime = Schema.String.annotations({ description: "ISO-8601, UTC" })
const IsoTimeOrNull = Schema.NullOr(IsoTime)
export const StreamStatus = Schema.Literal("open", "cancelled", "archived")

export const StreamSummary = Schema.Struct({
  id: Schema.String.annotations({ description: "stream_…" }),
  object: Schema.Literal("stream"),
  name: Schema.String,
  window: StreamWindow.annotations({ description: "How long each item may wait to start; past it, the item fails as expired" }),
  status: StreamStatus,
  created_at: IsoTime,
  updated_at: IsoTime,
  priority: Priority.annotations({
    description: "Its items' priority unless an item names its own `priority` (`priority` on create, default standard). An addition to the contract",
  }),
  waiting_on: Schema.NullOr(WaitingOn).annotations({
    description: "Why its oldest item waiting to start has not started (that item's `waiting_on`), or null with none waiting. An addition to the contract",
  }),
}).annotations({ identifier: "StreamSummary" })
export interface StreamSummary extends Schema.Schema.Type<typeof StreamSummary> {}

const Count = Schema.NonNegativeInt
export const StreamDetail = Schema.Struct({
  ...StreamSummary.fields,
  cancelled_at: IsoTimeOrNull,
  archived_at: IsoTimeOrNull,
  total_items: Count,
  pending_items: Count.annotations({ description: "Items waiting to start (queued, or waiting for a retry)" }),
  running_items: Count,
  completed_items: Count,
  failed_items: Count.annotations({ description: "Items that failed, those that expired before they started included" }),
  cancelled_items: Count,
  completion_ratio: Schema.Number.annotations({ description: "Items settled (completed, failed or cancelled) over all items; 0 with none" }),
  total_prompt_tokens: Count,
  total_completion_tokens: Count,
  total_tokens: Count,
  last_completion_at: IsoTimeOrNull,
  latest_completion_id: Schema.NullOr(Schema.String).annotations({
    description: "The stream's newest completion event's `completion_id`: a `starting_after` cursor for `GET /v1/responses/events`",
  }),
}).annotations({ identifier: "StreamDetail" })
export interface StreamDetail extends Schema.Schema.Type<typeof StreamDetail> {}

export const StreamList = Schema.Struct({ object: Schema.Literal("list"), items: Schema.Array(StreamSummary) }).annotations({
  identifier: "StreamList",
})
export interface StreamList extends Schema.Schema.Type<typeof StreamList> {}
