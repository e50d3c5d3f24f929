import { Effect } from "effect"
import { makeBodyCache } from "../actors/bodyCache.js"
import { BatchWriter } from "../actors/BatchWriter.js"
import { ModelCatalog } from "../config/ModelCatalog.js"
import { type ModelAccess, modelAccessOf } from "../domain/batch/validateCreate.js"
import { EventLog, type LogUnavailable } from "../eventlog/EventLog.js"
import { LogHealth } from "../eventlog/LogHealth.js"
import { batchAsOf } from "../projections/asOf.js"
import { type BatchRow, batchReads, toBatchObject } from "../projections/batchReads.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import { resultReads } from "../projections/resultReads.js"
import { tombstoneReads } from "../projections/tombstoneReads.js"
import type { Caller } from "./auth.js"
import { batchDeleted, batchInferenceUnavailable, batchNotFound, notFound } from "./errors.js"
import { makeEtas } from "./eta.js"
import { HttpSettings } from "./settings.js"
import { freshReads } from "./freshReads.js"
import { Waiting } from "./waiting.js"

const FRESH_READ_WAIT = "2 seconds"

/** What every batch endpoint needs: whether the log answers, the caller's batch, and the batch object as shown. */
export class BatchAccess extends Effect.Service<BatchAccess>()("Http/BatchAccess", {
  effect: Effect.gen(function* () {
    const db = yield* ReadModel
    const batches = batchReads(db)
    const results = resultReads(db)
    const tombstones = tombstoneReads(db)
    const writer = yield* BatchWriter
    const projector = yield* Projector
    const catalog = yield* ModelCatalog
    const settings = yield* HttpSettings
    const log = yield* EventLog
    const health = yield* LogHealth
    const waiting = yield* Waiting
    const logDown = (e: LogUnavailable) => batchInferenceUnavailable(e.message)
    /**
     * While the log is known to be away, every batch endpoint says so, reads included: what they show may
     * be stale. With several instances on the log, the read model first catches up with what the calls
     * wrote (bounded, freshReads.ts), so a call answers what any instance's call wrote before it began.
     */
    const caughtUp = freshReads(log, projector, FRESH_READ_WAIT).pipe(
      Effect.mapError(logDown),
      Effect.asVoid,
    )
    const reachable = Effect.suspend(() => {
      const why = health.unavailable()
      if (why !== undefined) return Effect.fail(batchInferenceUnavailable(why))
      return settings.freshReads === true ? caughtUp : Effect.void
    })

    /** The caller's batch; its owner is told when it was deleted, anyone else that no such batch exists. */
    const gone = (accountId: string, batchId: string) => {
      const tombstone = tombstones.ofAccount(accountId, batchId)
      return tombstone === undefined ? batchNotFound(batchId) : batchDeleted(batchId, tombstone.deleted_at, tombstone.reason)
    }
    const owned = (accountId: string, batchId: string) => {
      const row = batches.ofAccount(accountId, batchId)
      return row === undefined ? Effect.fail(gone(accountId, batchId)) : Effect.succeed(row)
    }
    const etas = makeEtas(db, projector)
    const now = () => Effect.runSync(writer.now)
    const shown = (row: BatchRow) => toBatchObject(row, etas.ofBatch(row, now()), waiting.ofBatch(row))
    const current = (batchId: string) => shown(batches.one(batchId)!)
    /** The batch's own read model as of an instant, from its events alone; 404 before it was created. */
    const asOf = <A>(row: { id: string; created_at: number }, seconds: number, read: (scratch: ReadModel["Type"]) => A) =>
      Effect.scoped(
        Effect.flatMap(batchAsOf(log, row.id, seconds).pipe(Effect.mapError(logDown)), (scratch) =>
          batchReads(scratch).one(row.id) === undefined
            ? Effect.fail(
                notFound(`No batch found with id '${row.id}' as of ${seconds}: it was created at ${row.created_at}`, "batch_not_found"),
              )
            : Effect.sync(() => read(scratch)),
        ),
      )
    // A rerun and the console's row view read a row's request from the log, where the bodies are stored.
    const requestBodies = makeBodyCache(results, log)
    /** The models a caller may put in a batch: the catalog's, narrowed to its account's list if it has one. */
    const isAvailable = (caller: Caller) => (model: string) =>
      catalog.has(model) && (caller.account.models === null || caller.account.models.includes(model))
    /** The same, with the endpoints each model serves: a row calling another is refused at create. */
    const modelAccess = (caller: Caller): ModelAccess => modelAccessOf((model) => catalog.get(model)?.endpoints, caller.account.models)

    return { db, batches, results, requestBodies, etas, log, projector, logDown, reachable, gone, owned, shown, current, asOf, isAvailable, modelAccess, now, waiting } as const
  }),
  dependencies: [Waiting.Default],
}) {}
