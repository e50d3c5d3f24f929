import { Context, Effect, Layer } from "effect"
import { ModelCatalog } from "../config/ModelCatalog.js"
import { EventLog } from "../eventlog/EventLog.js"
import { batchReads } from "../projections/batchReads.js"
import { ReadModel } from "../projections/ReadModel.js"
import { resultReads } from "../projections/resultReads.js"
import { BatchWriter } from "./BatchWriter.js"
import { Admission } from "./Admission.js"
import { type ModelActor, makeModelActor } from "./ModelActor.js"
import { ModelLoad } from "./ModelLoad.js"
import { InstanceId, Metrics, type ModelSnapshot } from "../metrics/Metrics.js"

export interface DispatcherShape {
  /** Hands a batch's waiting rows to their models' actors: one read per batch, never one per row. */
  readonly enqueueBatch: (batchId: string, createdAt?: number) => Effect.Effect<void>
  readonly dropBatch: (batchId: string) => void
  /** Shutdown has begun: the model actors start no more rows and let the running ones finish. */
  readonly stopTaking: Effect.Effect<void>
  readonly actors: ReadonlyMap<string, ModelActor>
  /** Every model's slots, queue and load now, in catalog order. */
  readonly models: () => ReadonlyArray<ModelSnapshot>
}

export class Dispatcher extends Context.Tag("Actors/Dispatcher")<Dispatcher, DispatcherShape>() {}

export const Live = Layer.scoped(
  Dispatcher,
  Effect.gen(function* () {
    const catalog = yield* ModelCatalog
    const writer = yield* BatchWriter
    const db = yield* ReadModel
    const results = resultReads(db)
    const batches = batchReads(db)
    const actors = new Map<string, ModelActor>()
    const admission = yield* Admission
    const load = yield* ModelLoad
    const log = yield* EventLog
    const metrics = yield* Metrics
    // One instance owns every model until leases exist.
    const owner = yield* InstanceId
    for (const model of catalog.values()) {
      actors.set(model.id, yield* makeModelActor(model, writer, results, log, admission, load, metrics, owner))
    }
    const models = () => [...actors.values()].map((actor) => actor.snapshot())
    metrics.watchModels(models)

    const failUnservable = (batchId: string, row: number, model: string) =>
      Effect.gen(function* () {
        const started = yield* writer.execute(batchId, { type: "StartRow", row, at: yield* writer.now })
        const start = started.events.find((e) => e.type === "row_started")
        if (start?.type !== "row_started") return
        const settled = yield* writer.execute(batchId, {
          type: "SettleRow",
          row,
          attempt: start.attempt,
          at: yield* writer.now,
          outcome: { _tag: "Permanent", error: { code: "model_not_found", message: `Model '${model}' not found`, status: 404 } },
        })
        if (settled.events.some((e) => e.type === "row_failed")) metrics.rowSettled(model, "failed", "model_not_found")
      })

    const enqueueBatch = (batchId: string, createdAt?: number) =>
      Effect.gen(function* () {
        const batch = batches.one(batchId)
        if (batch === undefined) return
        const byModel = new Map<string, Array<number>>()
        for (const { idx, model, status } of results.pending(batchId)) {
          if (status === "running") {
            // Only a restart leaves a row running with no worker: its attempt was lost and runs again.
            yield* writer.execute(batchId, { type: "InterruptRow", row: idx, at: yield* writer.now })
          }
          let rows = byModel.get(model)
          if (rows === undefined) byModel.set(model, (rows = []))
          rows.push(idx)
        }
        for (const [model, rows] of byModel) {
          const actor = actors.get(model)
          if (actor !== undefined) actor.enqueue(batch.account_id, batchId, rows, createdAt ?? batch.created_at * 1000)
          else for (const row of rows) yield* failUnservable(batchId, row, model)
        }
        yield* writer.execute(batchId, { type: "Reconcile", at: yield* writer.now })
      }).pipe(
        Effect.catchAllCause((cause) => Effect.logError(`batch ${batchId} could not be enqueued`, cause)),
      )

    for (const batch of batches.unfinished()) yield* enqueueBatch(batch.id)

    return {
      enqueueBatch,
      dropBatch: (batchId: string) => {
        for (const actor of actors.values()) actor.drop(batchId)
      },
      stopTaking: Effect.sync(() => {
        for (const actor of actors.values()) actor.stopTaking()
      }),
      actors,
      models,
    }
  }),
)
