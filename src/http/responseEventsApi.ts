import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { CompletionEventList } from "../domain/api/CompletionEvent.js"
import { BadRequest, TooManyRequests, Unauthorized, Unavailable } from "./errors.js"
import { MAX_WAIT_MS } from "./responseEventsParams.js"

/** Query values stay strings here: the handler answers a bad one with the API's own 400 envelope. */
const param = (description: string) =>
  Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))).annotations({ description })

const FeedParams = Schema.Struct({
  stream_id: param("Only this stream's events; without it, the completions outside streams (batch rows)"),
  limit: param("1 to 100, default 20"),
  starting_after: param("A completion_id: the events after it, oldest first"),
  ending_before: param("A completion_id: the events before it, newest first"),
  wait_ms: param(`With no event to answer yet, wait up to this long for one (0 to ${MAX_WAIT_MS}; larger values wait ${MAX_WAIT_MS}); default 0`),
})

/** The completion-events feed: every settled batch row of the caller's, in the log's order, resumable from any instance. */
export const ResponseEventsGroup = HttpApiGroup.make("responseEvents")
  .add(
    HttpApiEndpoint.get("list", "/v1/responses/events")
      .setUrlParams(FeedParams)
      .addSuccess(CompletionEventList)
      .addError(BadRequest)
      .annotateContext(
        OpenApi.annotations({
          description:
            "The caller's completion events: each batch row's attempt that completed, failed or was cancelled (rows a batch " +
            "settled without running them have none), at its place in the event log. After `starting_after` the events come " +
            "oldest first; before `ending_before`, and with neither cursor, newest first. `has_more` says whether more lie beyond " +
            "the page's last event, in its direction. A `completion_id` is the same on every instance and after any restart, so a " +
            "consumer that resumes after the last one it handled sees every event once. With `wait_ms` and nothing yet after the " +
            "cursor (or in the feed), the call answers as soon as an event arrives, or with an empty page when the time is up. " +
            "A deleted batch's events leave the feed.",
        }),
      ),
  )
  .addError(Unauthorized)
  .addError(TooManyRequests)
  .addError(Unavailable)
