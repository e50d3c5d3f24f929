import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { StreamWindow } from "../domain/stream/events.js"
import { documentedBody } from "./documentedBody.js"
import { BadRequest, Conflict, Forbidden, NotFound, PayloadTooLarge, TooManyRequests, Unauthorized, Unavailable } from "./errors.js"

const StreamPath = Schema.Struct({ stream_id: Schema.String })
const IsoTime = Schema.String.annotations({ description: "ISO-8601, UTC" })
const IsoTimeOrNull = Schema.NullOr(IsoTime)
const StreamStatus = Schema.Literal("open", "cancelled", "archived")

const StreamSummary = Schema.Struct({
  id: Schema.String.annotations({ description: "stream_…" }),
  object: Schema.Literal("stream"),
  name: Schema.String,
  window: StreamWindow.annotations({ description: "How long each item may wait to start; past it, the item fails as expired" }),
  status: StreamStatus,
  created_at: IsoTime,
  updated_at: IsoTime,
}).annotations({ identifier: "StreamSummary" })

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

const StreamList = Schema.Struct({ object: Schema.Literal("list"), items: Schema.Array(StreamSummary) }).annotations({
  identifier: "StreamList",
})

const StreamCreateRequest = Schema.Struct({
  name: Schema.String.annotations({ description: "Not empty" }),
  window: Schema.optional(StreamWindow).annotations({ description: "Default 24h" }),
}).annotations({ identifier: "StreamCreateRequest" })

const StreamPatchRequest = Schema.Struct({
  name: Schema.optional(Schema.String),
  status: Schema.optional(Schema.Literal("cancelled", "archived")),
}).annotations({ identifier: "StreamPatchRequest" })

/** sference's streams: named queues of responses that arrive over time, each item a `POST /v1/responses` naming it. */
export const StreamsGroup = HttpApiGroup.make("streams")
  .add(
    HttpApiEndpoint.post("create", "/v1/streams")
      .addSuccess(StreamDetail, { status: 201 })
      .addError(BadRequest)
      .addError(PayloadTooLarge)
      .annotateContext(documentedBody(StreamCreateRequest)),
  )
  .add(HttpApiEndpoint.get("list", "/v1/streams").addSuccess(StreamList))
  .add(HttpApiEndpoint.get("retrieve", "/v1/streams/:stream_id").setPath(StreamPath).addSuccess(StreamDetail).addError(NotFound))
  .add(
    HttpApiEndpoint.patch("update", "/v1/streams/:stream_id")
      .setPath(StreamPath)
      .addSuccess(StreamDetail)
      .addError(BadRequest)
      .addError(NotFound)
      .addError(Conflict)
      .annotateContext(documentedBody(StreamPatchRequest))
      .annotateContext(
        OpenApi.annotations({
          description:
            "Renames the stream, or closes it: `cancelled` takes no new items and cancels those not yet started (running ones " +
            "finish); `archived` is final. A stream never reopens; an archived one takes no change (409).",
        }),
      ),
  )
  .addError(Unauthorized)
  .addError(Forbidden)
  .addError(TooManyRequests)
  .addError(Unavailable)
