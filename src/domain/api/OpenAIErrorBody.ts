import { Schema } from "effect"

export const OpenAIErrorBody = Schema.Struct({
  error: Schema.Struct({
    message: Schema.String,
    type: Schema.String,
    param: Schema.NullOr(Schema.String),
    code: Schema.NullOr(Schema.String),
  }),
}).annotations({ identifier: "OpenAIErrorBody" })

export interface OpenAIErrorBody extends Schema.Schema.Type<typeof OpenAIErrorBody> {}
