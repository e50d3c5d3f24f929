import { Schema } from "effect"

const tokens = (what: string) => Schema.NullOr(Schema.Int).annotations({ description: `${what}, from the upstream's usage; null when it gave none` })

/** One entry of the completion-events feed, in sference's `StreamInferenceCompletionEvent` shape (plus `batch_id`, `result_id`). */
export const CompletionEvent = Schema.Struct({
  completion_id: Schema.String.annotations({
    description: "The event's place in the event log, the same on every instance: the cursor for `starting_after` and `ending_before`",
  }),
  response_id: Schema.NullOr(Schema.String).annotations({ description: "The response the event completes; null for a batch row" }),
  custom_id: Schema.NullOr(Schema.String).annotations({ description: "The batch row's custom_id" }),
  status: Schema.Literal("completed", "failed", "cancelled"),
  result: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown })).annotations({
    description: "The chat completion the upstream answered (the result line's `response.body`); null unless completed",
  }),
  error: Schema.NullOr(
    Schema.Struct({ code: Schema.String, message: Schema.String, status: Schema.optional(Schema.Int) }),
  ).annotations({ description: "Why the row failed or was cancelled, as its result line's `error`" }),
  prompt_tokens: tokens("Prompt tokens"),
  completion_tokens: tokens("Completion tokens"),
  total_tokens: tokens("Total tokens"),
  completed_at: Schema.String.annotations({ description: "When the row settled, ISO 8601 in UTC" }),
  batch_id: Schema.NullOr(Schema.String).annotations({ description: "The batch of a batch row (an addition)" }),
  result_id: Schema.NullOr(Schema.String).annotations({
    description: "The row's result id, for `GET /v1/batches/{batch_id}/results/{result_id}` (an addition)",
  }),
}).annotations({ identifier: "CompletionEvent" })

export interface CompletionEvent extends Schema.Schema.Type<typeof CompletionEvent> {}

export const CompletionEventList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(CompletionEvent),
  has_more: Schema.Boolean,
}).annotations({ identifier: "CompletionEventList" })

export interface CompletionEventList extends Schema.Schema.Type<typeof CompletionEventList> {}
