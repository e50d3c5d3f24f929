import type { BatchEndpoint } from "../domain/batch/endpoint.js"
import type { BatchCreated } from "../domain/batch/events.js"
import { DEFAULT_PRIORITY, type Priority } from "../domain/scheduling/priority.js"

/**
 * Whose batch it is and which models its rows use, for the writer's logs and metrics; the endpoint
 * they call, their priority and the time by which they must start, for its models' actors.
 */
export interface BatchOwner {
  readonly accountId: string
  readonly models: ReadonlyArray<string>
  /** Absent for chat completions. */
  readonly endpoint?: BatchEndpoint
  readonly priority: Priority
  /**
   * Its `expires_at` in whole seconds, as ms: the expiry timer fires at the batch object's `expires_at`
   * (seconds), up to a second before the event's own ms.
   */
  readonly startBy: number
}

export const ownerOf = (created: typeof BatchCreated.Type): BatchOwner => {
  const owner = { accountId: created.account_id, models: created.models, priority: created.priority ?? DEFAULT_PRIORITY, startBy: Math.floor(created.expires_at / 1000) * 1000 }
  return created.endpoint === undefined ? owner : { ...owner, endpoint: created.endpoint }
}
