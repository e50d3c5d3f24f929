import { Schema } from "effect"

const UnixMsOrNull = Schema.NullOr(Schema.Int)

export const BatchProgress = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("batch.progress"),
  started_at_ms: UnixMsOrNull.annotations({ description: "Unix ms at which the batch's first row started; null before" }),
  ended_at_ms: UnixMsOrNull.annotations({ description: "Unix ms at which the batch became final; null before" }),
  rows_settled: Schema.NonNegativeInt.annotations({
    description: "Rows an attempt of their own settled (completed, failed or cancelled while running); not those a cancel, failure or expiry settled unrun",
  }),
  rows_per_second: Schema.NullOr(Schema.NonNegative).annotations({
    description: "Once final: rows_settled over the seconds from started_at_ms to ended_at_ms, the same on every read; null before",
  }),
  bucket_ms: Schema.Int.annotations({ description: "The span of each entry of `settled`" }),
  settled: Schema.Array(Schema.NonNegativeInt).annotations({
    description: "Rows settled in each bucket_ms from started_at_ms, up to ended_at_ms (or now, while the batch runs); empty before it started",
  }),
}).annotations({
  identifier: "BatchProgress",
  description: "A batch's progress over time, from its rows' settle events: the console draws it. An addition to the contract",
})

export interface BatchProgress extends Schema.Schema.Type<typeof BatchProgress> {}
