import { Context, Duration, Effect, Layer, Stream, SubscriptionRef } from "effect"
import { initialLogHealth, type LogHealthState, type LogVerdict, observeLog } from "../domain/log/logHealth.js"
import { EventLog, type EventLogShape, LogUnavailable } from "./EventLog.js"

export interface LogHealthShape {
  /** Why the log cannot be used now, or undefined while it takes appends. Read from memory: no I/O. */
  readonly unavailable: () => string | undefined
  /** Since when (wall-clock ms) it has been unavailable, while it is. */
  readonly unavailableSince: () => number | undefined
  /** Probes the log now (bounded) and records what it found: fails unless the log would take an append. */
  readonly check: Effect.Effect<void, LogUnavailable>
  /** Why the log cannot be used, or undefined: as it stands now, then each time that changes. */
  readonly changes: Stream.Stream<string | undefined>
}

/** Whether the event log can be reached, as its latest-begun append or probe found it. */
export class LogHealth extends Context.Tag("EventLog/LogHealth")<LogHealth, LogHealthShape>() {}

const PROBE_TIMEOUT = Duration.seconds(3)
const PROBE_WHILE_UP = Duration.seconds(5)
const PROBE_WHILE_DOWN = Duration.seconds(1)

/**
 * The log, watched: any operation failing for want of the log marks it unavailable, and a successful
 * append or probe marks it available again, unless a later-begun one has ended since (its verdict is
 * newer: domain/log/logHealth.ts). A probe runs every few seconds as well, so a log that went away (or
 * hung: a SIGSTOPped nats-server answers nothing) is noticed when nothing is appended, and its return
 * when nothing retries. Runs on wall-clock time, like the log.
 */
export const watched = <E, R>(inner: Layer.Layer<EventLog, E, R>): Layer.Layer<EventLog | LogHealth, E, R> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const log = yield* EventLog
      let state: LogHealthState = initialLogHealth
      let begun = 0
      const standing = yield* SubscriptionRef.make<string | undefined>(undefined)
      // Only the changes are logged: an operator sees when the log went away, why, and when it came back.
      const observe = (n: number, verdict: LogVerdict) =>
        Effect.suspend(() => {
          const was = state.down
          state = observeLog(state, n, verdict, Date.now())
          if (was === undefined && state.down !== undefined) {
            return Effect.zipRight(SubscriptionRef.set(standing, state.down), Effect.logWarning(`the event log is unavailable: ${state.down}`))
          }
          if (was !== undefined && state.down === undefined) {
            return Effect.zipRight(SubscriptionRef.set(standing, undefined), Effect.logInfo("the event log is reachable again"))
          }
          return Effect.void
        })
      const failed = (n: number, e: LogUnavailable) => observe(n, { ok: false, why: e.message })
      /** `effect` numbered as it begins; a failure for want of the log is its verdict. */
      const onFailure = <A, Err>(effect: Effect.Effect<A, Err>) =>
        Effect.suspend(() => {
          const n = begun++
          return Effect.tapError(effect, (e) => (isUnavailable(e) ? failed(n, e) : Effect.void))
        })
      // A stream is numbered as it begins too: a read that began before a partition healed (its first
      // lookup sent into the cut connection) fails after the reconnected log answered newer operations.
      const onStreamFailure = <A, Err>(stream: () => Stream.Stream<A, Err>) =>
        Stream.suspend(() => {
          const n = begun++
          return Stream.tapError(stream(), (e) => (isUnavailable(e) ? failed(n, e) : Effect.void))
        })

      const check = Effect.suspend(() => {
        const n = begun++
        return log.probe.pipe(
          Effect.timeoutFail({
            duration: PROBE_TIMEOUT,
            onTimeout: () => new LogUnavailable({ message: `the event log did not answer within ${Duration.format(PROBE_TIMEOUT)}` }),
          }),
          Effect.tapBoth({ onFailure: (e) => failed(n, e), onSuccess: () => observe(n, { ok: true }) }),
        )
      })
      yield* Effect.forkScoped(
        Effect.forever(Effect.zipRight(Effect.ignore(check), Effect.suspend(() => Effect.sleep(state.down === undefined ? PROBE_WHILE_UP : PROBE_WHILE_DOWN)))),
      )

      const watchedLog: EventLogShape = {
        ...log,
        // An expectation that failed was answered by the log all the same.
        append: (messages) =>
          Effect.suspend(() => {
            const n = begun++
            return log.append(messages).pipe(
              Effect.tapBoth({ onFailure: (e) => (e._tag === "LogUnavailable" ? failed(n, e) : observe(n, { ok: true })), onSuccess: () => observe(n, { ok: true }) }),
            )
          }),
        read: (filter, fromSeq, options) => onStreamFailure(() => log.read(filter, fromSeq, options)),
        follow: (filter, fromSeq, options) => onStreamFailure(() => log.follow(filter, fromSeq, options)),
        readMessage: (subject, firstSeq, seq) => onFailure(log.readMessage(subject, firstSeq, seq)),
        lastSeq: onFailure(log.lastSeq),
        purge: (filter) => onFailure(log.purge(filter)),
      }
      return Context.make(EventLog, watchedLog).pipe(
        Context.add(LogHealth, { unavailable: () => state.down, unavailableSince: () => state.since, check, changes: standing.changes }),
      )
    }),
  ).pipe(Layer.provide(inner))

const isUnavailable = (e: unknown): e is LogUnavailable => e instanceof LogUnavailable
