import type { BatchEvent } from "./events.js"
import type { FinalStatus } from "./state.js"

/**
 * How a batch ends, and the event that first said so: a closing (`batch_cancelling`, `batch_failing`,
 * `batch_expiring`), or a final event written with no closing before it. Several instances decide a
 * batch's events, each on its own view of the log; the first of these events claimed for a batch
 * (FateStore) is its fate, and no writer may give it another.
 */
export type Ending = Extract<
  BatchEvent,
  {
    readonly type:
      | "batch_cancelling"
      | "batch_failing"
      | "batch_expiring"
      | "batch_cancelled"
      | "batch_failed"
      | "batch_expired"
      | "batch_completed"
  }
>

const fates: Readonly<Record<Ending["type"], FinalStatus>> = {
  batch_cancelling: "cancelled",
  batch_cancelled: "cancelled",
  batch_failing: "failed",
  batch_failed: "failed",
  batch_expiring: "expired",
  batch_expired: "expired",
  batch_completed: "completed",
}

export const isEnding = (event: BatchEvent): event is Ending => event.type in fates

export const fateOf = (ending: Ending): FinalStatus => fates[ending.type]

/** The first event of `events` that says how the batch ends. */
export const endingIn = (events: ReadonlyArray<BatchEvent>): Ending | undefined => events.find(isEnding)
