import { Schema } from "effect"

// `finalizing` is part of OpenAI's batch lifecycle but never occurs here.
export const BatchStatus = Schema.Literal(
  "validating",
  "in_progress",
  "completed",
  "failed",
  "expired",
  "cancelling",
  "cancelled",
).annotations({ identifier: "BatchStatus" })

export type BatchStatus = typeof BatchStatus.Type

export const FinalBatchStatuses: ReadonlySet<BatchStatus> = new Set(["completed", "failed", "expired", "cancelled"])
