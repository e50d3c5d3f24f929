import { NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Layer, Option } from "effect"
import { appLayer, logBackend } from "./app.js"
import { SluiceConfig } from "./config/Config.js"
import { startupFailureLine } from "./startupFailure.js"
import { testClock } from "./testClockControl.js"

/** A start-up failure an operator can fix is one line on stderr; anything else is shown whole. */
const report = (cause: Cause.Cause<unknown>, config: SluiceConfig | undefined) =>
  Effect.sync(() => {
    if (Cause.isInterruptedOnly(cause)) return
    const line = startupFailureLine(cause, config)
    process.stderr.write(line === undefined ? `${Cause.pretty(cause)}\n` : `sluice: ${line}\n`)
  })

const program = Effect.gen(function* () {
  const config = yield* SluiceConfig.pipe(Effect.tapErrorCause((cause) => report(cause, undefined)))
  const clock = yield* testClock
  yield* Effect.logInfo(`sluice starting on http://${config.host}:${config.port} with the ${logBackend(config)} event log`)
  return yield* Effect.suspend(() =>
    Layer.launch(appLayer(config, Option.match(clock, { onNone: () => ({}), onSome: (clock) => ({ clock }) }))),
  ).pipe(Effect.tapErrorCause((cause) => report(cause, config)))
}).pipe(Effect.scoped)

NodeRuntime.runMain(program, { disableErrorReporting: true })
