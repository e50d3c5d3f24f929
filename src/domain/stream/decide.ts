import { Either } from "effect"
import type { StreamEvent } from "./events.js"

export type StreamStatus = "open" | "cancelled" | "archived"

export interface StreamStanding {
  readonly id: string
  readonly accountId: string
  readonly status: StreamStatus
}

/** `PATCH /v1/streams/{id}`'s body, already checked for types. */
export interface StreamPatch {
  readonly name?: string
  readonly status?: "cancelled" | "archived"
}

export interface PatchRefused {
  readonly message: string
  readonly param: string
}

/**
 * A patch's events: a rename, then the status change. Cancelling a cancelled stream or archiving an
 * archived one changes nothing; an archived stream takes no change at all, and nothing reopens.
 */
export const decidePatch = (stream: StreamStanding, patch: StreamPatch, at: number): Either.Either<ReadonlyArray<StreamEvent>, PatchRefused> => {
  const ids = { stream_id: stream.id, account_id: stream.accountId, at }
  if (stream.status === "archived" && (patch.name !== undefined || patch.status === "cancelled")) {
    return Either.left({ message: `Stream '${stream.id}' is archived: an archived stream is final and takes no change`, param: patch.name !== undefined ? "name" : "status" })
  }
  const events: Array<StreamEvent> = []
  if (patch.name !== undefined) events.push({ type: "stream_renamed", ...ids, name: patch.name })
  if (patch.status === "cancelled" && stream.status === "open") events.push({ type: "stream_cancelled", ...ids })
  if (patch.status === "archived" && stream.status !== "archived") events.push({ type: "stream_archived", ...ids })
  return Either.right(events)
}

/** Whether a new item may join: only an open stream takes one. */
export const joinRefusal = (stream: StreamStanding): string | undefined =>
  stream.status === "open" ? undefined : `Stream '${stream.id}' is ${stream.status}: it takes no new items`
