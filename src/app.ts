import { type Clock, Effect, Layer, Option, Redacted } from "effect"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import * as Accounts from "./actors/Accounts.js"
import { ActorClock } from "./actors/ActorClock.js"
import { Admission } from "./actors/Admission.js"
import { ModelLoad } from "./actors/ModelLoad.js"
import { LoadSharing } from "./actors/LoadSharing.js"
import { natsLoadSharing } from "./actors/admission/natsLoadSharing.js"
import * as BatchLifecycle from "./actors/BatchLifecycle.js"
import * as BatchWriter from "./actors/BatchWriter.js"
import * as Dispatcher from "./actors/Dispatcher.js"
import * as StreamRetention from "./actors/StreamRetention.js"
import * as FileRetention from "./actors/FileRetention.js"
import * as Timers from "./actors/Timers.js"
import * as WebhookDeliverer from "./actors/WebhookDeliverer.js"
import { catalogLayer } from "./config/catalogLayer.js"
import * as DataDirLock from "./dataDirLock.js"
import type { SluiceConfig } from "./config/Config.js"
import { natsDeployment } from "./config/nats.js"
import * as JetStreamEventLog from "./eventlog/JetStreamEventLog.js"
import * as LogHealth from "./eventlog/LogHealth.js"
import * as SqliteEventLog from "./eventlog/SqliteEventLog.js"
import type { StampOptions } from "./eventlog/eventHeaders.js"
import * as LocalLeaseStore from "./actors/lease/localLeaseStore.js"
import * as NatsLeaseStore from "./actors/lease/natsLeaseStore.js"
import * as FateStore from "./actors/fate/FateStore.js"
import * as NatsFateStore from "./actors/fate/natsFateStore.js"
import { serverLayer } from "./http/server.js"
import { BatchAccess } from "./http/batchAccess.js"
import { FrontSocket, frontsLayer } from "./http/front/fronts.js"
import { HttpSettings } from "./http/settings.js"
import * as Projector from "./projections/Projector.js"
import { ReadModel } from "./projections/ReadModel.js"
import { ProjectionLag } from "./projections/lag.js"
import { InstanceId, Metrics } from "./metrics/Metrics.js"
import { metered } from "./metrics/meteredEventLog.js"

export const logBackend = (config: SluiceConfig) => (Option.isSome(config.natsUrl) ? "nats" : "embedded")

export const eventLogLayer = (config: SluiceConfig, stamp: StampOptions = {}) =>
  Option.match(natsDeployment(config), {
    onNone: () => SqliteEventLog.layer({ path: join(config.dataDir, "log.sqlite"), ...stamp }),
    onSome: (nats) => JetStreamEventLog.layer({ ...nats, ...stamp }),
  })

/** The model leases: a KV bucket beside the JetStream log, or this instance's memory beside the embedded one. */
export const leaseStoreLayer = (config: SluiceConfig) =>
  Option.match(config.natsUrl, {
    onNone: () => LocalLeaseStore.layer(config.leaseTtlMs),
    onSome: (url) => NatsLeaseStore.layer({ url, ttlMs: config.leaseTtlMs, replicas: config.natsReplicas }),
  })

/** How batches end: claimed in a KV bucket beside the JetStream log, where several instances decide them; the embedded log has one. */
export const fateStoreLayer = (config: SluiceConfig) =>
  Option.match(config.natsUrl, {
    onNone: () => FateStore.single,
    onSome: (url) => NatsFateStore.layer({ url, replicas: config.natsReplicas }),
  })

/** Instances on one NATS log share their accounts' slots and models' interactive load; the embedded log has one instance. */
export const loadSharingLayer = (config: SluiceConfig) =>
  Option.match(natsDeployment(config), {
    onNone: () => LoadSharing.alone,
    onSome: (nats) => natsLoadSharing(nats, config.instanceId),
  })

/** One read model per log backend: its offsets are positions in that log only. */
export const readModelPath = (config: SluiceConfig) => join(config.dataDir, `read.${logBackend(config)}.sqlite`)

export interface AppOptions {
  /**
   * The clock the actors schedule by (timestamps, backoff, key expiry, upstream timeouts).
   * Tests pass a TestClock; the log, projections and HTTP server always run on wall-clock time.
   */
  readonly clock?: Clock.Clock
  /** BENCH-ONLY (`SLUICE_BENCH_WITHOUT_CHAIN`, src/benchSwitches.ts): `false` writes no hash-chain links. */
  readonly chain?: boolean
  /**
   * HTTP front processes serving the port (SLUICE_HTTP_WORKERS; src/http/front/fronts.ts): none by default, so that
   * tests composing the app in their own process serve HTTP from it. Only the server's entry point asks for them.
   */
  readonly httpWorkers?: number
}

/** The whole service, composed once: log → projections → writers → actors → HTTP. */
export const appLayer = (config: SluiceConfig, options: AppOptions = {}) => {
  mkdirSync(config.dataDir, { recursive: true })
  const onActorClock = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
    options.clock === undefined ? layer : Layer.locallyEffect(layer, Effect.withClock(options.clock))
  const metrics = Metrics.live.pipe(Layer.provideMerge(InstanceId.layer(config.instanceId)))
  const core = ProjectionLag.layer.pipe(
    Layer.provideMerge(Projector.Live),
    Layer.provideMerge(ReadModel.layer(readModelPath(config))),
    Layer.provideMerge(LogHealth.watched(Layer.provide(metered, eventLogLayer(config, options.chain === false ? { chain: false } : {})))),
    Layer.provideMerge(metrics),
    // Taken before the log and the read model are opened, let go after they are closed.
    Layer.provideMerge(DataDirLock.layer(config.dataDir)),
  )
  const batchWriter = BatchLifecycle.announcing.pipe(
    Layer.provide(onActorClock(BatchWriter.Live)),
    Layer.provideMerge(BatchLifecycle.layer),
  )
  const writers = Layer.mergeAll(batchWriter, onActorClock(Accounts.Live), onActorClock(ActorClock.layer)).pipe(
    Layer.provideMerge(fateStoreLayer(config)),
    Layer.provideMerge(core),
  )
  const retentionMs = config.retentionDays * 86_400_000
  const actors = Layer.mergeAll(
    onActorClock(Timers.layer({ retentionMs })),
    onActorClock(StreamRetention.layer({ retentionMs })),
    onActorClock(FileRetention.layer),
    onActorClock(WebhookDeliverer.layer),
  ).pipe(
    Layer.provideMerge(onActorClock(Dispatcher.Live).pipe(Layer.provide(Layer.succeed(Dispatcher.RunsModels, config.runModels)))),
    Layer.provideMerge(
      Layer.merge(onActorClock(Admission.live), onActorClock(ModelLoad.live)).pipe(Layer.provide(loadSharingLayer(config))),
    ),
    Layer.provideMerge(Layer.provideMerge(leaseStoreLayer(config), writers)),
    Layer.provideMerge(catalogLayer(config.modelsPath)),
  )
  const settings = Layer.succeed(HttpSettings, {
    completionWindowMs: config.completionWindowHours * 3_600_000,
    maxUnfinishedBatches: config.maxUnfinishedBatches,
    adminToken: config.adminToken,
    metricsToken: config.metricsToken,
    readyMaxLagSeconds: config.readyMaxLagSeconds,
    freshReads: Option.isSome(config.natsUrl),
    port: config.port,
  })
  const bootstrap = Layer.effectDiscard(
    Effect.gen(function* () {
      if (Option.isNone(config.bootstrapKey)) return
      const accounts = yield* Accounts.Accounts
      yield* accounts.bootstrap(Redacted.value(config.bootstrapKey.value))
    }),
  )
  const below = Layer.merge(bootstrap.pipe(Layer.provideMerge(actors)), settings)
  const httpWorkers = options.httpWorkers ?? 0
  const served =
    httpWorkers === 0
      ? serverLayer({ port: config.port, host: config.host, corsOrigins: config.corsOrigins }).pipe(Layer.provideMerge(below))
      : // This process answers only what the fronts hand it, on a private socket; the fronts serve the port.
        frontsLayer({ count: httpWorkers, host: config.host, port: config.port, readModelPath: readModelPath(config), wallClock: options.clock === undefined, natsUrl: Option.getOrUndefined(config.natsUrl) }).pipe(
          Layer.provide(BatchAccess.Default),
          Layer.provideMerge(
            Layer.unwrapEffect(
              Effect.map(FrontSocket, (socket) =>
                serverLayer({ port: config.port, host: config.host, corsOrigins: config.corsOrigins, socketPath: socket.path }),
              ),
            ),
          ),
          Layer.provideMerge(below),
          Layer.provideMerge(FrontSocket.layer),
        )
  // Built after the HTTP server so that it is released before it: on SIGTERM no row starts while
  // the server waits for its open requests to end; the actors' own finalizers then drain the running rows.
  const stopTakingRowsFirst = Layer.scopedDiscard(
    Effect.flatMap(Dispatcher.Dispatcher, (dispatcher) => Effect.addFinalizer(() => dispatcher.stopTaking)),
  )
  const listening = Layer.effectDiscard(
    Effect.logInfo(`listening on http://${config.host}:${config.port}`).pipe(Effect.annotateLogs({ instance: config.instanceId })),
  )
  return Layer.merge(stopTakingRowsFirst, listening).pipe(Layer.provide(served))
}
