import { Clock, Context, Effect, Exit, Fiber, Layer, Queue, Schedule, Scope } from "effect"
import { ModelCatalog } from "../config/ModelCatalog.js"
import { LOG_RETRY as logRetry } from "./logRetry.js"
import { isFinal } from "../domain/batch/state.js"
import { EventLog } from "../eventlog/EventLog.js"
import { batchReads } from "../projections/batchReads.js"
import type { BatchChange } from "../projections/batches.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import { resultReads } from "../projections/resultReads.js"
import { BatchWriter } from "./BatchWriter.js"
import { Admission } from "./Admission.js"
import type { LaneHold } from "./lease/LaneHold.js"
import { type HeldLease, type LeaseInfo, type Ownership, makeLeaseKeeper } from "./lease/LeaseKeeper.js"
import { LeaseStore } from "./lease/LeaseStore.js"
import { type ModelActor, makeModelActor } from "./ModelActor.js"
import { ModelLoad } from "./ModelLoad.js"
import { InstanceId, Metrics, type ModelSnapshot } from "../metrics/Metrics.js"

/** Whether this instance takes model leases; one that does not serves the API while others run the models. */
export class RunsModels extends Context.Reference<RunsModels>()("Actors/RunsModels", { defaultValue: () => true }) {}

export interface DispatcherShape {
  /** Hands a batch's waiting rows to the actors of the models this instance holds the leases of. */
  readonly enqueueBatch: (batchId: string, createdAt?: number) => Effect.Effect<void>
  readonly dropBatch: (batchId: string) => void
  /** Shutdown has begun: the model actors start no more rows and let the running ones finish. */
  readonly stopTaking: Effect.Effect<void>
  /** The actors of the models whose leases this instance holds. */
  readonly actors: ReadonlyMap<string, ModelActor>
  /** Every model's slots, queue and load now, in catalog order (a model owned elsewhere shows its owner only). */
  readonly models: () => ReadonlyArray<ModelSnapshot>
  /** The leases of every model, as the lease store last showed them. */
  readonly leases: () => ReadonlyArray<LeaseInfo>
  /** Whether the model has a live owner, and what that owner last published of why its rows wait. */
  readonly ownership: (model: string) => Ownership
}

export class Dispatcher extends Context.Tag("Actors/Dispatcher")<Dispatcher, DispatcherShape>() {}

interface Owned {
  readonly actor: ModelActor
  readonly scope: Scope.CloseableScope
  readonly lease: HeldLease
  /** Batches whose lane this owner has claimed and whose rows it queued. */
  readonly batches: Set<string>
}

const LOG_RETRY = logRetry.pipe(Schedule.upTo("30 seconds"))
/**
 * How often the batches whose rows have all settled, and which are still not final, are reconciled: the
 * backstop for a final event nobody wrote (its writer's append lost, its ending claimed by an instance
 * that then went away, a reconciliation that failed while the log was away).
 */
const RECONCILE_EVERY = "10 seconds"

export const Live = Layer.scoped(
  Dispatcher,
  Effect.gen(function* () {
    const catalog = yield* ModelCatalog
    const writer = yield* BatchWriter
    const db = yield* ReadModel
    const results = resultReads(db)
    const batches = batchReads(db)
    const admission = yield* Admission
    const load = yield* ModelLoad
    const log = yield* EventLog
    const metrics = yield* Metrics
    const projector = yield* Projector
    const store = yield* LeaseStore
    const me = yield* InstanceId
    // The actors schedule rows by the service's clock (a TestClock in tests), whichever fiber starts them.
    const actorClock = yield* Effect.clock
    const layerScope = yield* Effect.scope
    const owned = new Map<string, Owned>()
    const actors = new Map<string, ModelActor>()
    let stopping = false
    // Set once the keeper exists: an actor that finds its lease lost tells the keeper, which stops it.
    let loseLease: (model: string, reason: string) => Effect.Effect<void> = () => Effect.void

    const failUnservable = (batchId: string, row: number, model: string) =>
      Effect.gen(function* () {
        // No actor holds a lane of a model the catalog lost: the first instance to come by settles its rows.
        const lane: LaneHold = { model, owner: me, revision: 0, valid: () => true, validThrough: () => Number.POSITIVE_INFINITY }
        const started = yield* writer.executeRow(batchId, { type: "StartRow", row, at: yield* writer.now }, lane)
        const start = started.events.find((e) => e.type === "row_started")
        if (start?.type !== "row_started") return
        const settled = yield* writer.executeRow(
          batchId,
          {
            type: "SettleRow",
            row,
            attempt: start.attempt,
            at: yield* writer.now,
            outcome: { _tag: "Permanent", error: { code: "model_not_found", message: `Model '${model}' not found`, status: 404 } },
          },
          lane,
        )
        if (settled.events.some((e) => e.type === "row_failed")) metrics.rowSettled(model, "failed", "model_not_found")
      })

    /** Claims the batch's lane of an owned model and queues the rows the log says may run. */
    const takeBatch = (entry: Owned, batchId: string, createdAt?: number): Effect.Effect<void> =>
      Effect.gen(function* () {
        if (entry.batches.has(batchId)) return
        entry.batches.add(batchId)
        const claimed = yield* writer
          .claimLane(batchId, entry.lease)
          .pipe(Effect.retry({ schedule: LOG_RETRY, while: (e) => e._tag === "LogUnavailable" }), Effect.either)
        if (claimed._tag === "Left") {
          entry.batches.delete(batchId)
          if (claimed.left._tag === "LeaseLost") return yield* loseLease(entry.lease.model, claimed.left.reason)
          return
        }
        const { rows, accountId, endpoint, terms } = claimed.right
        if (owned.get(entry.lease.model) !== entry) return
        const created = createdAt ?? (batches.one(batchId)?.created_at ?? 0) * 1000
        if (rows.length > 0) entry.actor.enqueue(accountId, batchId, rows, endpoint === undefined ? { createdAt: created, terms } : { createdAt: created, endpoint, terms })
        yield* writer.execute(batchId, { type: "Reconcile", at: yield* writer.now }).pipe(Effect.ignore)
      }).pipe(Effect.catchAllCause((cause) => Effect.logError(`batch ${batchId} could not be taken on ${entry.lease.model}`, cause)))

    const enqueueBatch = (batchId: string, createdAt?: number) =>
      Effect.gen(function* () {
        const batch = batches.one(batchId)
        if (batch === undefined) return
        const models = JSON.parse(batch.models) as ReadonlyArray<string>
        for (const model of models) {
          const entry = owned.get(model)
          if (entry !== undefined) yield* takeBatch(entry, batchId, createdAt)
          else if (!catalog.has(model)) {
            for (const { idx, model: rowModel } of results.pending(batchId)) {
              if (rowModel === model) yield* failUnservable(batchId, idx, model)
            }
          }
        }
      }).pipe(Effect.catchAllCause((cause) => Effect.logError(`batch ${batchId} could not be enqueued`, cause)))

    /** A model's actor under a new lease: it takes every unfinished batch of the model, from the log. */
    const start = (lease: HeldLease): Effect.Effect<void> =>
      Effect.gen(function* () {
        const model = catalog.get(lease.model)
        if (model === undefined || stopping) return
        const scope = yield* Scope.make()
        const actor = yield* makeModelActor(model, writer, results, log, admission, load, metrics, lease, (lost) =>
          Effect.runFork(loseLease(lost.model, lost.reason)),
        ).pipe(Effect.withClock(actorClock), Scope.extend(scope))
        const entry: Owned = { actor, scope, lease, batches: new Set() }
        owned.set(lease.model, entry)
        actors.set(lease.model, actor)
        metrics.leaseChanged(lease.model, "taken")
        // Every batch created before this point is in the read model once it has reached the log's end.
        yield* Effect.forkDaemon(
          Effect.gen(function* () {
            yield* projector.awaitSeq(yield* log.lastSeq.pipe(Effect.retry(LOG_RETRY)))
            for (const batch of batches.unfinished()) {
              if ((JSON.parse(batch.models) as ReadonlyArray<string>).includes(lease.model)) yield* takeBatch(entry, batch.id)
            }
          }).pipe(Effect.catchAllCause((cause) => Effect.logError(`the batches of ${lease.model} could not be taken`, cause))),
        )
      })

    const stop = (model: string, handOver: boolean): Effect.Effect<void> =>
      Effect.gen(function* () {
        const entry = owned.get(model)
        if (entry === undefined) return
        owned.delete(model)
        actors.delete(model)
        metrics.leaseChanged(model, handOver ? "handed_over" : "lost")
        if (!handOver) entry.actor.abandon()
        // Handing over: its running rows finish and are written before the lease goes.
        yield* Scope.close(entry.scope, Exit.void)
        for (const batchId of entry.batches) writer.invalidate(batchId)
      })

    const keeper = yield* makeLeaseKeeper({
      store,
      me,
      models: [...catalog.keys()],
      runsModels: yield* RunsModels,
      start,
      stop,
      stateOf: (model) => actors.get(model)?.waitState(),
    })
    loseLease = keeper.lose

    const onChange = (change: BatchChange) =>
      Effect.gen(function* () {
        switch (change.kind) {
          case "created":
            for (const model of change.models) {
              const entry = owned.get(model)
              if (entry !== undefined) yield* takeBatch(entry, change.batchId)
            }
            return
          case "closed":
            for (const entry of owned.values()) {
              entry.actor.drop(change.batchId)
              entry.batches.delete(change.batchId)
            }
            writer.invalidate(change.batchId)
            return
          case "settled": {
            // Every row settled: the owner of the batch's first model writes its final event, from the
            // log, if the writers that settled its lanes (on other instances, perhaps) did not.
            const batch = batches.one(change.batchId)
            if (batch === undefined || isFinal(batch.status) || !reconciles(JSON.parse(batch.models))) return
            // Not in line: while the log is away it is retried, and the other changes must not wait for it.
            yield* Effect.forkIn(
              Effect.flatMap(finishedHere(change.batchId), (finished) => (finished ? Effect.void : reconcile(change.batchId))),
              layerScope,
            )
          }
        }
      }).pipe(Effect.catchAllCause((cause) => Effect.logError(`batch ${change.batchId} change could not be handled`, cause)))

    /**
     * Whether this instance writes the final event of a batch whose rows have all settled: the owner of
     * the first of its models that has an owner, or any instance running models when none has (a model
     * gone from the catalog). Two instances doing it at once write one final event: the log keeps one.
     */
    const reconciles = (models: ReadonlyArray<string>) => {
      if (stopping) return false
      const held = new Set(keeper.info().filter((l) => l.owner !== "").map((l) => l.model))
      const first = [...models].sort().find((m) => held.has(m) || owned.has(m))
      return first === undefined ? owned.size > 0 : owned.has(first)
    }
    // Decided on the batch as the log holds it; a final event whose ending another writer claimed is
    // decided again knowing it (the claim's closing goes first), so it is asked twice.
    const reconcile = (batchId: string) =>
      Effect.gen(function* () {
        for (let round = 0; round < 2; round++) {
          const written = yield* writer
            .execute(batchId, { type: "Reconcile", at: yield* writer.now })
            .pipe(Effect.retry({ schedule: LOG_RETRY, while: (e) => e._tag === "LogUnavailable" }))
          if (written.events.length > 0) return
        }
      }).pipe(Effect.catchAllCause((cause) => Effect.logWarning(`batch ${batchId} could not be reconciled; it is tried again`, cause)))

    /**
     * Whether the batch is final once this writer's appends on it have ended and the read model holds the
     * log as it is: the writer that settles a batch's last row appends its final event after that row's
     * window, and on NATS the read model may apply the window before it. Reconciling reads the whole batch
     * from the log, twice: 120-240 ms of the dispatch thread for 20,000 rows. Unsure (the log away), not.
     */
    const finishedHere = (batchId: string) =>
      Effect.gen(function* () {
        yield* writer.appended(batchId)
        yield* projector.awaitSeq(yield* log.lastSeq)
        const batch = batches.one(batchId)
        return batch === undefined || isFinal(batch.status)
      }).pipe(Effect.orElseSucceed(() => false))

    // A batch found so twice in a row: its final event is normally a moment behind its last settle.
    let settledBefore = new Set<string>()
    const reconcileSettled = Effect.gen(function* () {
      const settled = new Set(batches.settledNotFinal().filter((b) => reconciles(JSON.parse(b.models))).map((b) => b.id))
      for (const id of settled) if (settledBefore.has(id)) yield* reconcile(id)
      settledBefore = settled
    })
    yield* Effect.sleep(RECONCILE_EVERY).pipe(
      Effect.zipRight(reconcileSettled),
      Effect.catchAllCause((cause) => Effect.logError("settled batches could not be reconciled", cause)),
      Effect.forever,
      Effect.withClock(Clock.make()),
      Effect.forkScoped,
    )

    const changes = yield* projector.batchChanges
    yield* Queue.take(changes).pipe(
      Effect.flatMap((window) => Effect.forEach(window, onChange, { discard: true })),
      Effect.forever,
      Effect.forkScoped,
    )
    // The leases follow the store's time, the wall clock, whatever clock the actors schedule rows by.
    const rounds = yield* keeper.run.pipe(Effect.withClock(Clock.make()), Effect.forkScoped)
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        stopping = true
        yield* Fiber.interrupt(rounds)
        yield* keeper.release
        for (const model of [...owned.keys()]) yield* stop(model, true)
      }),
    )

    const models = () =>
      [...catalog.values()].map((model): ModelSnapshot => {
        const actor = actors.get(model.id)
        if (actor !== undefined) return actor.snapshot()
        const holder = keeper.info().find((l) => l.model === model.id)?.owner ?? ""
        return {
          model: model.id,
          batchConcurrency: model.batchConcurrency,
          concurrency: load.concurrency(model),
          slotsLimit: 0,
          slotsInUse: 0,
          running: 0,
          queuedByAccount: new Map(),
          queuedByPriority: new Map(),
          interactiveInFlight: load.interactiveInFlight(model),
          leaseOwner: holder,
        }
      })
    metrics.watchModels(models)

    return {
      enqueueBatch,
      dropBatch: (batchId: string) => {
        for (const entry of owned.values()) {
          entry.actor.drop(batchId)
          entry.batches.delete(batchId)
        }
      },
      stopTaking: Effect.sync(() => {
        stopping = true
        for (const actor of actors.values()) actor.stopTaking()
      }),
      actors,
      models,
      leases: keeper.info,
      ownership: keeper.ownership,
    }
  }),
)
