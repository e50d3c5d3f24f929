import { Effect, Schedule } from "effect"
import { LogUnavailable } from "../eventlog/EventLog.js"

/** How the actors wait for an unavailable log: quickly at first, then every two seconds. */
export const LOG_RETRY = Schedule.exponential("100 millis").pipe(Schedule.union(Schedule.spaced("2 seconds")))

export const isUnavailable = (e: unknown): e is LogUnavailable => e instanceof LogUnavailable

/**
 * `attempt` again, with a warning each time, while the log is unavailable (a NATS restart, a publish
 * whose ack was lost): the work is never dropped for it. The retry is set up only once an attempt has
 * failed, so the row path pays nothing for it while the log answers.
 */
export const whileLogUnavailable = <A, E>(attempt: Effect.Effect<A, E | LogUnavailable>, waits: (e: LogUnavailable) => string) => {
  const warned = (e: unknown) => (isUnavailable(e) ? Effect.logWarning(waits(e)) : Effect.void)
  return attempt.pipe(
    Effect.catchIf(isUnavailable, (e) =>
      Effect.andThen(warned(e), attempt.pipe(Effect.tapError(warned), Effect.retry({ schedule: LOG_RETRY, while: isUnavailable }))),
    ),
  )
}
