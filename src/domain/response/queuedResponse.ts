import { Schema } from "effect"

/*
 * A response that waits for a model's batch slot (a background response, a stream's item, a flex
 * request) runs as a batch of one row: the same turns, slots, retries, owner checks, quota, expiry and
 * retention, on its own subjects (`response.<id>.…`). Its `batch_created` event carries this part of
 * the request beside the row: the storage format, so fields are only ever added.
 */

export const ResponseEndpoint = Schema.Literal("/v1/responses", "/v1/chat/completions")
export type ResponseEndpoint = typeof ResponseEndpoint.Type

export const QueuedResponse = Schema.Struct({
  endpoint: ResponseEndpoint.annotations({
    description: "The endpoint the caller used: how its result is answered (a Response, or a chat completion for a flex request)",
  }),
  background: Schema.Boolean.annotations({ description: "Whether the request asked for `background: true`" }),
  service_tier: Schema.Literal("default", "flex").annotations({ description: "`flex`: a blocking request that waited for a batch slot" }),
  stream_id: Schema.NullOr(Schema.String).annotations({ description: "The stream it is an item of (`metadata.stream_id`), or null" }),
  custom_id: Schema.NullOr(Schema.String).annotations({ description: "The caller's `metadata.custom_id`, carried to its completion event, or null" }),
  echo: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
    description: "What the Response object echoes of the request (instructions, tools, sampling settings), as sent",
  }),
}).annotations({
  description:
    "Only on `response.<response_id>.batch_created`: the response this one-row batch runs, beside its row (the row's request body is in `row_bodies`)",
})
export type QueuedResponse = typeof QueuedResponse.Type
