import type { RowError, RowResponse } from "../batch/events.js"

/** Where a response run as a one-row batch stands: its batch's status and its row's result. */
export interface RunStanding {
  readonly batchStatus: string
  /** The row's status in the results (`queued`, `running`, `completed`, `failed`, `cancelled`, `expired`). */
  readonly rowStatus: string | null
  readonly rowResponse: RowResponse | null
  readonly rowError: RowError | null
  /** Why the whole batch failed (the key that made it was revoked): its row's own error says less. */
  readonly batchError: { readonly code: string; readonly message: string } | null
}

/** What a Response says of a run: still running, answered by the model, or ended without an answer. */
export type Shown =
  | { readonly _tag: "InProgress" }
  | { readonly _tag: "Answered"; readonly response: RowResponse }
  | { readonly _tag: "Cancelled"; readonly response: RowResponse | null }
  | { readonly _tag: "Failed"; readonly error: { readonly code: string; readonly message: string } }

const unfinished: ReadonlySet<string> = new Set(["validating", "in_progress", "cancelling", "finalizing"])

/**
 * A response is `in_progress` until its batch is final, so that it never shows a status it leaves
 * again; a cancelled one keeps the answer its running call brought back, if any.
 */
export const shownOf = (run: RunStanding): Shown => {
  if (unfinished.has(run.batchStatus)) return { _tag: "InProgress" }
  if (run.batchStatus === "cancelled") return { _tag: "Cancelled", response: run.rowStatus === "completed" ? run.rowResponse : null }
  if (run.rowStatus === "completed" && run.rowResponse !== null) return { _tag: "Answered", response: run.rowResponse }
  if (run.rowError !== null) return { _tag: "Failed", error: { code: run.rowError.code, message: run.rowError.message } }
  if (run.batchError !== null) return { _tag: "Failed", error: run.batchError }
  return { _tag: "Failed", error: { code: "server_error", message: `The request ended ${run.rowStatus ?? run.batchStatus} without an answer` } }
}
