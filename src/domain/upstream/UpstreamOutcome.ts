import { Data } from "effect"
import type { RowErrorCode } from "../api/RowErrorCode.js"

export type UpstreamOutcome = Data.TaggedEnum<{
  Response: { readonly status: number; readonly body: unknown; readonly retryAfterMs?: number }
  Timeout: {}
  NetworkError: { readonly message: string }
}>

export const UpstreamOutcome = Data.taggedEnum<UpstreamOutcome>()

export type UpstreamClassification = Data.TaggedEnum<{
  Success: {}
  /** `code` is what the row fails with if this was its last attempt. */
  Retryable: {
    readonly code: RowErrorCode
    readonly status?: number
    readonly message: string
    readonly retryAfterMs?: number
  }
  Permanent: { readonly code: RowErrorCode; readonly status: number; readonly message: string }
}>

export const UpstreamClassification = Data.taggedEnum<UpstreamClassification>()
