import { FinalBatchStatuses } from "../api/BatchStatus.js"
import type { BatchStatus } from "../api/BatchStatus.js"
import type { RowEvent } from "./events.js"

/** How a batch stopped starting rows: cancelled, or its owner became invalid, or its window closed. */
export type ClosedAs = "cancelled" | "failed" | "expired"

/** Where a row event takes its row. */
export type RowEffect = "running" | "queued" | "completed" | "failed" | "cancelled"

/**
 * What a row event does, given how its batch stands at the event's place in the log: the same rule for
 * every reader (the decider's state and the projections), so they agree whoever wrote the event and
 * from whatever view. Nothing changes a final batch. A start after the batch closed is void: the
 * closing settled that row. A transient failure after it closed ends the row, as the decider would
 * have decided had it known. Each reader still applies an effect only from the phase the event leaves
 * (a start to a queued row of a lower attempt, a settle to the running attempt).
 */
export const rowEffect = (
  batch: { readonly status: BatchStatus; readonly closedAs: ClosedAs | undefined },
  event: RowEvent,
): RowEffect | undefined => {
  if (FinalBatchStatuses.has(batch.status)) return undefined
  switch (event.type) {
    case "row_started":
      return batch.closedAs === undefined ? "running" : undefined
    case "row_retrying":
      if (batch.closedAs === undefined) return "queued"
      return batch.closedAs === "cancelled" ? "cancelled" : "failed"
    case "row_completed":
      return "completed"
    case "row_failed":
      return "failed"
    case "row_cancelled":
      return "cancelled"
  }
}
