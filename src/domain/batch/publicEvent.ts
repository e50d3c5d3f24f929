import type { BatchEvent, RowBodies, RowCancelled, RowCompleted, RowFailed, RowsAdded } from "./events.js"

export type TerminalRowEvent = typeof RowCompleted.Type | typeof RowFailed.Type | typeof RowCancelled.Type

/** The input rows without their request bodies: a watcher of a 32 MiB batch is not sent its inputs again. */
export interface PublicRowsAdded {
  readonly type: "rows_added"
  readonly batch_id: string
  readonly first: number
  readonly rows: ReadonlyArray<{ readonly custom_id: string; readonly model: string }>
}

/** A finished row with the custom_id its result line is listed under. */
export type PublicTerminalRowEvent = TerminalRowEvent & { readonly custom_id: string }

/** A batch event as the events endpoint shows it: never its request bodies (`row_bodies`). */
export type PublicBatchEvent =
  | Exclude<BatchEvent, typeof RowsAdded.Type | typeof RowBodies.Type | TerminalRowEvent>
  | PublicRowsAdded
  | PublicTerminalRowEvent

const terminalRowTypes: ReadonlySet<BatchEvent["type"]> = new Set(["row_completed", "row_failed", "row_cancelled"])

export const isTerminalRowEvent = (event: BatchEvent): event is TerminalRowEvent => terminalRowTypes.has(event.type)

export function publicEvent(event: TerminalRowEvent, customId: string): PublicTerminalRowEvent
export function publicEvent(event: Exclude<BatchEvent, TerminalRowEvent | typeof RowBodies.Type>): PublicBatchEvent
export function publicEvent(event: Exclude<BatchEvent, typeof RowBodies.Type>, customId?: string): PublicBatchEvent {
  if (event.type === "rows_added") {
    return {
      type: event.type,
      batch_id: event.batch_id,
      first: event.first,
      rows: event.rows.map((row) => ({ custom_id: row.custom_id, model: row.model })),
    }
  }
  if (isTerminalRowEvent(event)) return { ...event, custom_id: customId! }
  return event
}
