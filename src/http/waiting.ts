import { Effect } from "effect"
import { ActorClock } from "../actors/ActorClock.js"
import { Admission } from "../actors/Admission.js"
import { Dispatcher } from "../actors/Dispatcher.js"
import { FinalBatchStatuses } from "../domain/api/BatchStatus.js"
import { type WaitingOn, type WaitingReason, WaitingReasons, allAsleep, batchWork, mayWait, waitingOn } from "../domain/waiting/waitingOn.js"
import { LogHealth } from "../eventlog/LogHealth.js"
import { Metrics } from "../metrics/Metrics.js"
import { type BatchRow, batchReads } from "../projections/batchReads.js"
import { ReadModel } from "../projections/ReadModel.js"

/**
 * Why a batch (or a response run as a one-row batch) waits, from facts every instance holds: the
 * read model's counts, the account's standing as Admission sees it, each model's lease and what its
 * owner published with it, and the log's health. Two instances answer alike once they have read the
 * same lease round.
 */
export class Waiting extends Effect.Service<Waiting>()("Http/Waiting", {
  effect: Effect.gen(function* () {
    const dispatcher = yield* Dispatcher
    const admission = yield* Admission
    const health = yield* LogHealth
    const clock = yield* ActorClock
    const metrics = yield* Metrics
    const batches = batchReads(yield* ReadModel)

    const ofBatch = (row: BatchRow): WaitingOn | null => {
      if (FinalBatchStatuses.has(row.status) || row.closing !== null) return null
      const counts = batchWork(row)
      // Nothing waits: the account, the models and the next retry need not be looked up.
      if (!mayWait(counts)) return null
      const why = health.unavailable()
      return waitingOn({
        work: {
          ...counts,
          nextRetryAt: allAsleep(counts) ? batches.nextRetryAt(row.id) : undefined,
          movedAt: row.moved_ms ?? row.created_ms,
          background: row.priority === "background",
        },
        account: admission.standing(row.account_id, row.key_id),
        models: (JSON.parse(row.models) as ReadonlyArray<string>).map((model) => ({ model, ...dispatcher.ownership(model) })),
        log: why === undefined ? undefined : { since: health.unavailableSince() ?? Date.now(), why },
        now: clock.unsafeCurrentTimeMillis(),
      })
    }

    // Every instance reads the whole deployment's batches: each reports the deployment's figure.
    metrics.watchWaiting(() => {
      const counts = new Map<WaitingReason, number>(WaitingReasons.map((r) => [r, 0]))
      for (const row of batches.openBatches()) {
        const reason = ofBatch(row)?.reason
        if (reason !== undefined) counts.set(reason, counts.get(reason)! + 1)
      }
      return counts
    })

    return { ofBatch, one: (id: string) => {
      const row = batches.one(id)
      return row === undefined ? null : ofBatch(row)
    } } as const
  }),
}) {}
