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

/** The statuses a batch ends in, once no row of it runs: nothing changes it again. */
export const FinalBatchStatuses: ReadonlySet<BatchStatus> = new Set(["completed", "failed", "expired", "cancelled"])

/** Open: rows may still start. */
export const OpenBatchStatuses: ReadonlySet<BatchStatus> = new Set(["validating", "in_progress"])

/** Unfinished, as the contract counts them for an account's limit: open, or cancelling. */
export const UnfinishedBatchStatuses: ReadonlySet<BatchStatus> = new Set(["validating", "in_progress", "cancelling"])
