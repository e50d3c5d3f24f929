import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Logger, Option } from "effect"
import { appLayer, logBackend } from "./app.js"
import { SluiceConfig } from "./config/Config.js"
import { testClock } from "./testClockControl.js"

// `text` is one logfmt line per entry; `pretty` spreads its annotations over several lines, for a terminal.
const loggers = { text: Logger.logFmt, json: Logger.json, pretty: Logger.pretty }

const program = Effect.gen(function* () {
  const config = yield* SluiceConfig
  return yield* Effect.gen(function* () {
    const clock = yield* testClock
    yield* Effect.logInfo(`sluice starting on http://${config.host}:${config.port} with the ${logBackend(config)} event log`)
    return yield* Layer.launch(appLayer(config, Option.match(clock, { onNone: () => ({}), onSome: (clock) => ({ clock }) })))
  }).pipe(Effect.provide(loggers[config.logFormat]), Logger.withMinimumLogLevel(config.logLevel))
}).pipe(Effect.scoped)

NodeRuntime.runMain(program, { disablePrettyLogger: true })
