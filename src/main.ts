import { NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Layer, Logger, Option } from "effect"
import { loggerLayer } from "./logLines.js"
import { appLayer, logBackend } from "./app.js"
import { SluiceConfig } from "./config/Config.js"
import { startupFailureLine } from "./startupFailure.js"
import { testClock } from "./testClockControl.js"
import { benchWithoutChain } from "./benchSwitches.js"


/** A start-up failure an operator can fix is one line on stderr; anything else is shown whole. */
const report = (cause: Cause.Cause<unknown>, config: SluiceConfig | undefined) =>
  Effect.sync(() => {
    if (Cause.isInterruptedOnly(cause)) return
    const line = startupFailureLine(cause, config)
    process.stderr.write(line === undefined ? `${Cause.pretty(cause)}\n` : `sluice: ${line}\n`)
  })

const program = Effect.gen(function* () {
  const config = yield* SluiceConfig.pipe(Effect.tapErrorCause((cause) => report(cause, undefined)))
  return yield* Effect.gen(function* () {
    const clock = yield* testClock
    const withoutChain = yield* benchWithoutChain
    if (withoutChain) yield* Effect.logWarning("SLUICE_BENCH_WITHOUT_CHAIN is set: this log gets no hash-chain links (a benchmark switch)")
    yield* Effect.logInfo(`sluice starting on http://${config.host}:${config.port} with the ${logBackend(config)} event log`)
    return yield* Effect.suspend(() =>
      Layer.launch(
        appLayer(config, {
          ...Option.match(clock, { onNone: () => ({}), onSome: (clock) => ({ clock }) }),
          ...(withoutChain ? { chain: false } : {}),
          httpWorkers: config.httpWorkers,
        }),
      ),
    ).pipe(Effect.tapErrorCause((cause) => report(cause, config)))
  }).pipe(Effect.provide(loggerLayer(config.logFormat)), Logger.withMinimumLogLevel(config.logLevel))
}).pipe(Effect.scoped)

NodeRuntime.runMain(program, { disablePrettyLogger: true, disableErrorReporting: true })
