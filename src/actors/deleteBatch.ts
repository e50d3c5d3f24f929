import { Effect, FiberSet, Schedule, Stream } from "effect"
import type { BatchEvent, DeletionReason } from "../domain/batch/events.js"
import { isoDay } from "../domain/account/utcDay.js"
import { decodeBatchMessage, eventsOf } from "../domain/batch/laneWindow.js"
import { batchSubject, oneBatch, withoutRowBodies } from "../domain/batch/subjects.js"
import { HASH_HEADER } from "../eventlog/eventHeaders.js"
import { EventLog } from "../eventlog/EventLog.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import { tombstoneReads } from "../projections/tombstoneReads.js"
import { BatchWriter } from "./BatchWriter.js"
import { Dispatcher } from "./Dispatcher.js"
import { FateStore } from "./fate/FateStore.js"

const WHILE_LOG_DOWN = Schedule.exponential("1 second").pipe(Schedule.union(Schedule.spaced("1 minute")))
const encoder = new TextEncoder()

/**
 * Deletes a batch with its results and its history: what `DELETE` does, and retention after it. The
 * batch's history is purged, and its tombstone (`batch_purged`) written after, as the one event left
 * on its subjects. Until that event is in the log the read model's tombstone says the purge is still
 * owed, and `resumeBurials` finishes it after a crash or while the log was unavailable.
 */
export const makeDeleteBatch = Effect.gen(function* () {
  const writer = yield* BatchWriter
  const projector = yield* Projector
  const dispatcher = yield* Dispatcher
  const log = yield* EventLog
  const fates = yield* FateStore
  const tombstones = tombstoneReads(yield* ReadModel)
  // Purges finished in the background end with the service, not after it (the log is closed by then).
  const background = yield* FiberSet.make()

  /**
   * Purges the batch's history, then writes its tombstone. Safe to run again from the start: a tombstone
   * a lost ack hid is purged with the rest and written again.
   */
  const bury = (batchId: string) =>
    Effect.gen(function* () {
      const tombstone = tombstones.one(batchId)
      if (tombstone === undefined || tombstone.purged === 1) return
      const heads: Record<string, string> = {}
      const spent: Record<string, number> = {}
      yield* log.read(oneBatch(batchId), 1, withoutRowBodies).pipe(
        Stream.runForEach((m) => Effect.sync(() => {
          const link = m.headers?.[HASH_HEADER]
          if (link !== undefined) heads[m.subject] = link
          const decoded = decodeBatchMessage(m.data)
          for (const e of decoded === undefined ? [] : eventsOf(decoded)) {
            if (e.type === "row_completed" && e.cost_usd > 0) spent[isoDay(e.at)] = (spent[isoDay(e.at)] ?? 0) + e.cost_usd
          }
        })),
      )
      yield* log.purge(oneBatch(batchId))
      yield* fates.forget(batchId)
      const event: BatchEvent = {
        type: "batch_purged",
        batch_id: batchId,
        account_id: tombstone.account_id,
        created_at: tombstone.created_at,
        deleted_at: tombstone.deleted_at,
        reason: tombstone.reason,
        ...(Object.keys(heads).length === 0 ? {} : { chain_heads: heads }),
        ...(Object.keys(spent).length === 0 ? {} : { spent }),
      }
      // No message id: a purge does not clear JetStream's de-duplication window, which would drop the
      // tombstone written again after a crash. The guard alone keeps it to one.
      const seq = yield* log
        .append([{ subject: batchSubject(batchId, "batch_purged"), data: encoder.encode(JSON.stringify(event)), expectLastSubjectSeq: 0 }])
        .pipe(
          Effect.map((written) => Math.max(0, ...written.map((w) => w.seq))),
          Effect.catchTag("WrongLastSequence", () => log.lastSeq),
        )
      yield* projector.awaitSeq(seq)
    })

  const buryWhileLogDown = (batchId: string) =>
    bury(batchId).pipe(
      Effect.retry({ schedule: WHILE_LOG_DOWN, while: (e) => e._tag === "LogUnavailable" }),
      Effect.catchAllCause((cause) => Effect.logError(`the history of deleted batch ${batchId} could not be purged`, cause)),
    )

  const deleteBatch = (batchId: string, reason: DeletionReason = "deleted") =>
    Effect.gen(function* () {
      const written = yield* writer.execute(batchId, { type: "Delete", at: yield* writer.now, reason })
      yield* projector.awaitSeq(written.seq)
      dispatcher.dropBatch(batchId)
      // The batch already reads as deleted; a purge the log cannot take now is finished in the background.
      const first = bury(batchId)
      yield* first.pipe(
        Effect.catchAll((e) =>
          Effect.zipRight(
            Effect.logWarning(`purging ${batchId} from the log failed; retrying in the background`, e),
            FiberSet.run(background, buryWhileLogDown(batchId)),
          ),
        ),
      )
    })

  /** Finishes the deletions a crash or an unavailable log left unpurged: at start, once the read model has the whole log. */
  const resumeBurials = Effect.gen(function* () {
    yield* projector.awaitSeq(yield* log.lastSeq.pipe(Effect.retry(WHILE_LOG_DOWN)))
    for (const { id } of tombstones.unpurged()) yield* buryWhileLogDown(id)
  })

  return Object.assign(deleteBatch, { resumeBurials })
})

export type DeleteBatch = Effect.Effect.Success<typeof makeDeleteBatch>
