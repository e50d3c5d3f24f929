import type { BatchEvent } from "./events.js"

/**
 * When an event happened, by its writer's clock (ms): the times the batch object shows. The input
 * chunks have none; they belong to the creation that follows them.
 */
export const eventTime = (event: BatchEvent): number | undefined => {
  switch (event.type) {
    case "batch_created":
      return event.created_at
    case "batch_purged":
      return event.deleted_at
    case "rows_added":
    case "row_bodies":
      return undefined
    default:
      return event.at
  }
}

/** Whether an event at `ms` had happened by the whole second `asOfSeconds` (every event within that second has). */
export const happenedBy = (ms: number, asOfSeconds: number) => Math.floor(ms / 1000) <= asOfSeconds
