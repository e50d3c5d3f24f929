import { Context, Data, Duration, Effect, Layer } from "effect"
import { EventLog } from "../eventlog/EventLog.js"
import { Metrics } from "../metrics/Metrics.js"
import { Projector } from "./Projector.js"

export interface Lag {
  /** The log's last sequence. */
  readonly head: number
  /** The last sequence every projection has applied. */
  readonly applied: number
  readonly events: number
  readonly seconds: number
}

export class LogSilent extends Data.TaggedError("LogSilent")<{ readonly message: string }> {}

/** How long the log may take to tell its head before it counts as not answering. */
const HEAD_TIMEOUT = Duration.seconds(2)

/** How far this instance's projections are behind the log: for `/readyz` and the lag gauges. */
export class ProjectionLag extends Context.Tag("Projections/ProjectionLag")<
  ProjectionLag,
  { readonly check: Effect.Effect<Lag, LogSilent> }
>() {
  static readonly layer = Layer.effect(
    ProjectionLag,
    Effect.gen(function* () {
      const log = yield* EventLog
      const projector = yield* Projector
      const metrics = yield* Metrics
      // The first look that found the projections behind, in this spell of being behind.
      let behindSince: number | undefined
      const check = Effect.gen(function* () {
        const head = yield* log.lastSeq.pipe(
          Effect.timeoutFail({
            duration: HEAD_TIMEOUT,
            onTimeout: () => new LogSilent({ message: `the event log did not answer within ${Duration.format(HEAD_TIMEOUT)}` }),
          }),
          Effect.catchTag("LogUnavailable", (e) => Effect.fail(new LogSilent({ message: `the event log is unavailable: ${e.message}` }))),
        )
        const applied = yield* projector.applied
        const events = Math.max(0, head - applied)
        if (events === 0) {
          behindSince = undefined
          return { head, applied, events, seconds: 0 }
        }
        const now = Date.now()
        behindSince ??= now
        return { head, applied, events, seconds: Math.max(projector.appliedDelayMs(), now - behindSince) / 1000 }
      })
      metrics.watchProjectionLag(() => Effect.runPromise(Effect.orElseSucceed(check, () => undefined)))
      return { check }
    }),
  )
}
