import { Effect, FiberMap, Layer, Queue, Schedule } from "effect"
import { OpenBatchStatuses } from "../domain/api/BatchStatus.js"
import { isFinal } from "../domain/batch/state.js"
import { type BatchDeadlines, batchReads } from "../projections/batchReads.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import { atDeadline } from "./atDeadline.js"
import { BatchLifecycle } from "./BatchLifecycle.js"
import { BatchWriter } from "./BatchWriter.js"
import { makeDeleteBatch } from "./deleteBatch.js"
import { Dispatcher } from "./Dispatcher.js"

export interface TimersOptions {
  /** How long a finished batch is kept, from the time it finished. */
  readonly retentionMs: number
}

const WHILE_LOG_DOWN = Schedule.exponential("1 second").pipe(Schedule.union(Schedule.spaced("1 minute")))
const WHILE_ROWS_RUN = Schedule.spaced("1 minute")

/**
 * The completion window and retention: each unfinished batch expires at its `expires_at`, each
 * finished one is deleted `retentionMs` after it finished. Deadlines come from the read model at
 * start and from the lifecycle queue after, and run on the actors' clock.
 */
export const layer = (options: TimersOptions) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const writer = yield* BatchWriter
      const projector = yield* Projector
      const dispatcher = yield* Dispatcher
      const changes = yield* BatchLifecycle
      const batches = batchReads(yield* ReadModel)
      const deleteBatch = yield* makeDeleteBatch
      const clock = yield* Effect.clock
      const timers = yield* FiberMap.make<string>()

      const at = (deadline: number, action: Effect.Effect<void>) => atDeadline(clock, deadline, action)

      const expire = (batchId: string) =>
        Effect.gen(function* () {
          yield* writer.execute(batchId, { type: "Expire", at: yield* writer.now })
          dispatcher.dropBatch(batchId)
        }).pipe(
          // The expiry it writes replans the batch's timers, which removes this one: it finishes first.
          Effect.uninterruptible,
          Effect.retry({ schedule: WHILE_LOG_DOWN, while: (e) => e._tag === "LogUnavailable" }),
          Effect.catchTag("BatchNotFound", () => Effect.void),
          Effect.catchAllCause((cause) => Effect.logError(`batch ${batchId} could not be expired`, cause)),
        )

      const remove = (batchId: string) =>
        deleteBatch(batchId, "retention").pipe(
          // Likewise: the deletion replans the batch's timers; the purge must not be cut short by it.
          Effect.uninterruptible,
          Effect.retry({ schedule: WHILE_LOG_DOWN, while: (e) => e._tag === "LogUnavailable" }),
          // A row still finishing after its batch expired or failed: the batch goes once it has.
          Effect.retry({ schedule: WHILE_ROWS_RUN, while: (e) => e._tag === "RowsStillRunning" }),
          Effect.catchTag("BatchNotFound", () => Effect.void),
          Effect.catchAllCause((cause) => Effect.logError(`batch ${batchId} could not be deleted after retention`, cause)),
        )

      const expiry = (batchId: string) => `${batchId}:expiry`
      const retention = (batchId: string) => `${batchId}:retention`

      /** A batch's deadlines never move once known, so a planned timer is left as it is. */
      const plan = (batchId: string, batch: BatchDeadlines | undefined) =>
        Effect.gen(function* () {
          if (batch === undefined) {
            yield* FiberMap.remove(timers, expiry(batchId))
            return yield* FiberMap.remove(timers, retention(batchId))
          }
          if (OpenBatchStatuses.has(batch.status)) {
            return yield* FiberMap.run(timers, expiry(batchId), at(batch.expires_at * 1000, expire(batchId)), {
              onlyIfMissing: true,
            })
          }
          yield* FiberMap.remove(timers, expiry(batchId))
          if (isFinal(batch.status) && batch.finished_at !== null) {
            yield* FiberMap.run(
              timers,
              retention(batchId),
              at(batch.finished_at * 1000 + options.retentionMs, remove(batchId)),
              { onlyIfMissing: true },
            )
          }
        })

      for (const batch of batches.deadlines()) yield* plan(batch.id, batch)
      yield* Effect.forkScoped(deleteBatch.resumeBurials.pipe(Effect.catchAllCause((cause) => Effect.logError("unfinished deletions could not be resumed", cause))))
      yield* Queue.take(changes).pipe(
        Effect.flatMap(({ batchId, seq }) =>
          projector.awaitSeq(seq).pipe(Effect.andThen(Effect.suspend(() => plan(batchId, batches.deadlinesOf(batchId))))),
        ),
        Effect.catchAllCause((cause) => Effect.logError("a batch's timers could not be planned", cause)),
        Effect.forever,
        Effect.forkScoped,
      )
    }),
  )
