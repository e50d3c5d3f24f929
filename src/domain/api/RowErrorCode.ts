import { Schema } from "effect"

export const RowErrorCode = Schema.Literal(
  "invalid_request",
  "model_not_found",
  "forbidden",
  "rate_limited",
  "timeout",
  "service_unavailable",
  "upstream_error",
  "batch_failed",
  "batch_expired",
).annotations({ identifier: "RowErrorCode" })

export type RowErrorCode = typeof RowErrorCode.Type
