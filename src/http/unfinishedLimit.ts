import { Effect } from "effect"
import { secondsUntilAPlaceFrees } from "../domain/batch/placeFreesIn.js"
import type { BatchReads } from "../projections/batchReads.js"
import { RetryLater, tooManyRequests } from "./errors.js"

/** How many unfinished batches (`validating`, `in_progress`, `cancelling`) an account may have. */
export const unfinishedLimit = (batches: BatchReads, max: number, now: Effect.Effect<number>) => {
  // Creates between their check and their batch becoming readable, per account: two concurrent
  // creates cannot both take the last place.
  const storing = new Map<string, number>()
  /** Read only when refusing: the account's unfinished batches, at most the limit of them. */
  const refused = (accountId: string) =>
    Effect.map(now, (at) => {
      const retryAfter = secondsUntilAPlaceFrees(
        batches.unfinishedOf(accountId).map((b) => ({
          total: b.total,
          settled: b.completed + b.failed + b.cancelled,
          createdAt: b.created_ms,
          expiresAt: b.expires_at * 1000,
          closed: b.closing !== null,
        })),
        at,
      )
      return new RetryLater(
        tooManyRequests(
          `You already have ${max} unfinished batches (validating, in_progress or cancelling), the most allowed; wait for one to finish or cancel one before creating another`,
          "too_many_unfinished_batches",
        ),
        retryAfter,
      )
    })
  const hasRoom = (accountId: string) =>
    Effect.suspend(() =>
      batches.unfinishedCount(accountId) + (storing.get(accountId) ?? 0) < max ? Effect.void : Effect.flip(refused(accountId)),
    )
  /** Runs `store` holding one of the account's places, or refuses when none is left. */
  const holdingPlace = <A, E, R>(accountId: string, store: Effect.Effect<A, E, R>) =>
    Effect.acquireUseRelease(
      Effect.tap(hasRoom(accountId), () => Effect.sync(() => storing.set(accountId, (storing.get(accountId) ?? 0) + 1))),
      () => store,
      () =>
        Effect.sync(() => {
          const left = (storing.get(accountId) ?? 1) - 1
          if (left === 0) storing.delete(accountId)
          else storing.set(accountId, left)
        }),
    )
  return { hasRoom, holdingPlace }
}
