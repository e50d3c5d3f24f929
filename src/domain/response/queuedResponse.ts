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
  /** The endpoint the caller used: how its result is answered (a Response, or a chat completion for flex). */
  endpoint: ResponseEndpoint,
  background: Schema.Boolean,
  service_tier: Schema.Literal("default", "flex"),
  stream_id: Schema.NullOr(Schema.String),
  custom_id: Schema.NullOr(Schema.String),
  /** What the Response object echoes of the request (instructions, tools, sampling settings), as sent. */
  echo: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
})
export type QueuedResponse = typeof QueuedResponse.Type
