import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { appLayer, logBackend } from "./app.js"
import { SluiceConfig } from "./config/Config.js"
import { testClock } from "./testClockControl.js"

const program = Effect.gen(function* () {
  const config = yield* SluiceConfig
  const clock = yield* testClock
  yield* Effect.logInfo(`sluice starting on http://${config.host}:${config.port} with the ${logBackend(config)} event log`)
  return yield* Layer.launch(appLayer(config, Option.match(clock, { onNone: () => ({}), onSome: (clock) => ({ clock }) })))
}).pipe(Effect.scoped)

NodeRuntime.runMain(program)
