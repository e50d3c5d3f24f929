import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { StreamDetail, StreamList } from "../domain/api/StreamObject.js"
import { StreamWindow } from "../domain/stream/events.js"
import { Priority } from "../domain/scheduling/priority.js"
import { documentedBody } from "./documentedBody.js"
import { BadRequest, Conflict, Forbidden, NotFound, PayloadTooLarge, TooManyRequests, Unauthorized, Unavailable } from "./errors.js"

const StreamPath = Schema.Struct({ stream_id: Schema.String })

const StreamCreateRequest = Schema.Struct({
  name: Schema.String.annotations({ description: "Not empty" }),
  window: Schema.optional(StreamWindow).annotations({ description: "Default 24h" }),
  priority: Schema.optional(Priority).annotations({
    description:
      "Its items' priority unless an item names its own (default standard); above the account's `max_priority` answers 403. An addition to the contract",
  }),
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
