import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { appLayer, logBackend } from "./app.js"
import { SluiceConfig } from "./config/Config.js"

const program = Effect.gen(function* () {
  const config = yield* SluiceConfig
  yield* Effect.logInfo(`sluice starting on http://${config.host}:${config.port} with the ${logBackend(config)} event log`)
  return yield* Layer.launch(appLayer(config))
})

NodeRuntime.runMain(program)
