import { Schema } from "effect"

const UnixSecondsOrNull = Schema.NullOr(Schema.Int).annotations({ description: "Unix seconds, or null with no measured rate yet" })
const TokenSource = Schema.Literal("upstream", "approximate").annotations({
  description: "upstream: counted by the model server's own tokenizer (vLLM's POST /tokenize); approximate: OpenAI's o200k encoding",
})

export const ModelEstimate = Schema.Struct({
  model: Schema.String,
  requests: Schema.NonNegativeInt,
  prompt_tokens: Schema.NonNegativeInt,
  max_completion_tokens: Schema.NonNegativeInt.annotations({
    description: "Each row's max_completion_tokens or max_tokens, else what the model's context leaves (4096 when the upstream does not say)",
  }),
  cost_usd_min: Schema.NonNegative.annotations({ description: "The prompts alone, at the model's prices" }),
  cost_usd_max: Schema.NonNegative.annotations({ description: "The prompts and every completion budget used" }),
  tokens: TokenSource,
  rows_ahead: Schema.NonNegativeInt.annotations({ description: "Rows of other batches the turns would start before this batch's last row on the model" }),
  estimated_completion_at: UnixSecondsOrNull,
}).annotations({ identifier: "ModelEstimate" })

/** `POST /v1/batches/estimate`: what a create of the same body would cost and when it would finish. Stores nothing. */
export const BatchEstimate = Schema.Struct({
  object: Schema.Literal("batch.estimate"),
  request_counts: Schema.Struct({ total: Schema.NonNegativeInt }),
  models: Schema.Array(ModelEstimate),
  cost_usd_min: Schema.NonNegative,
  cost_usd_max: Schema.NonNegative,
  estimated_completion_at: UnixSecondsOrNull,
  tokens: TokenSource,
  fits: Schema.Struct({
    unfinished_batches: Schema.Boolean.annotations({ description: "A create now would not be refused for the unfinished-batch limit" }),
    daily_quota: Schema.Boolean.annotations({ description: "cost_usd_max fits what is left of the account's daily quota (true without a quota)" }),
    priority: Schema.Boolean.annotations({ description: "The body's `priority` is within the account's `max_priority`: a create would not be refused with 403" }),
  }),
}).annotations({ identifier: "BatchEstimate" })
