import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Option, Redacted } from "effect"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import * as Accounts from "./actors/Accounts.js"
import * as BatchWriter from "./actors/BatchWriter.js"
import * as Dispatcher from "./actors/Dispatcher.js"
import { catalogLayer } from "./config/catalogLayer.js"
import { SluiceConfig } from "./config/Config.js"
import * as JetStreamEventLog from "./eventlog/JetStreamEventLog.js"
import * as SqliteEventLog from "./eventlog/SqliteEventLog.js"
import { serverLayer } from "./http/server.js"
import { HttpSettings } from "./http/settings.js"
import * as Projector from "./projections/Projector.js"
import { ReadModel } from "./projections/ReadModel.js"

const program = Effect.gen(function* () {
  const config = yield* SluiceConfig
  mkdirSync(config.dataDir, { recursive: true })
  const backend = Option.isSome(config.natsUrl) ? "nats" : "embedded"
  const log = Option.match(config.natsUrl, {
    onNone: () => SqliteEventLog.layer({ path: join(config.dataDir, "log.sqlite") }),
    onSome: (url) => JetStreamEventLog.layer({ url }),
  })
  // One read model per log backend: its offsets are positions in that log only.
  const readModel = ReadModel.layer(join(config.dataDir, `read.${backend}.sqlite`))
  const core = Projector.Live.pipe(Layer.provideMerge(readModel), Layer.provideMerge(log))
  const writers = Layer.mergeAll(BatchWriter.Live, Accounts.Live).pipe(Layer.provideMerge(core))
  const actors = Dispatcher.Live.pipe(Layer.provideMerge(writers), Layer.provideMerge(catalogLayer(config.modelsPath)))
  const settings = Layer.succeed(HttpSettings, {
    completionWindowMs: config.completionWindowHours * 3_600_000,
    adminToken: config.adminToken,
  })
  const bootstrap = Layer.effectDiscard(
    Effect.gen(function* () {
      if (Option.isNone(config.bootstrapKey)) return
      const accounts = yield* Accounts.Accounts
      yield* accounts.bootstrap(Redacted.value(config.bootstrapKey.value))
    }),
  )
  const app = serverLayer({ port: config.port, host: config.host }).pipe(
    Layer.provide(Layer.merge(bootstrap.pipe(Layer.provideMerge(actors)), settings)),
  )
  yield* Effect.logInfo(`sluice starting on http://${config.host}:${config.port} with the ${backend} event log`)
  return yield* Layer.launch(app)
})

NodeRuntime.runMain(program)
