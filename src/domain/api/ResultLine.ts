import { Schema } from "effect"
import { RowErrorCode } from "./RowErrorCode.js"

export const ResultStatus = Schema.Literal("queued", "running", "completed", "failed", "cancelled", "expired").annotations({
  identifier: "ResultStatus",
})

export type ResultStatus = typeof ResultStatus.Type

export const ResultResponse = Schema.Struct({
  status_code: Schema.Int,
  request_id: Schema.String,
  body: Schema.Unknown.annotations({ description: "The chat completion, as /v1/chat/completions returned it" }),
}).annotations({ identifier: "ResultResponse" })

export interface ResultResponse extends Schema.Schema.Type<typeof ResultResponse> {}

export const ResultError = Schema.Struct({
  code: RowErrorCode,
  message: Schema.String,
  status: Schema.optional(Schema.Int),
}).annotations({ identifier: "ResultError" })

export interface ResultError extends Schema.Schema.Type<typeof ResultError> {}

export const ResultLine = Schema.Struct({
  id: Schema.String,
  custom_id: Schema.String,
  status: ResultStatus,
  response: Schema.NullOr(ResultResponse),
  error: Schema.NullOr(ResultError),
}).annotations({ identifier: "ResultLine" })

export interface ResultLine extends Schema.Schema.Type<typeof ResultLine> {}
