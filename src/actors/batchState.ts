import type { BatchEndpoint } from "../domain/batch/endpoint.js"
import type { BatchCreated } from "../domain/batch/events.js"

/** Whose batch it is and which models its rows use, for the writer's logs and metrics; the endpoint they call, for its models' actors. */
export interface BatchOwner {
  readonly accountId: string
  readonly models: ReadonlyArray<string>
  /** Absent for chat completions. */
  readonly endpoint?: BatchEndpoint
}

export const ownerOf = (created: typeof BatchCreated.Type): BatchOwner =>
  created.endpoint === undefined
    ? { accountId: created.account_id, models: created.models }
    : { accountId: created.account_id, models: created.models, endpoint: created.endpoint }
