import { Context, Duration, Effect, Layer, Stream } from "effect"
import { EventLog, type EventLogShape, LogUnavailable } from "./EventLog.js"

export interface LogHealthShape {
  /** Why the log cannot be used now, or undefined while it takes appends. Read from memory: no I/O. */
  readonly unavailable: () => string | undefined
}

/** Whether the event log can be reached, as its last append or probe found it. */
export class LogHealth extends Context.Tag("EventLog/LogHealth")<LogHealth, LogHealthShape>() {}

const PROBE_TIMEOUT = Duration.seconds(3)
const PROBE_WHILE_UP = Duration.seconds(5)
const PROBE_WHILE_DOWN = Duration.seconds(1)

/**
 * The log, watched: any operation failing for want of the log marks it unavailable, and a successful
 * append or probe marks it available again. A probe runs every few seconds as well, so a log that
 * went away (or hung: a SIGSTOPped nats-server answers nothing) is noticed when nothing is appended,
 * and its return when nothing retries. Runs on wall-clock time, like the log.
 */
export const watched = <E, R>(inner: Layer.Layer<EventLog, E, R>): Layer.Layer<EventLog | LogHealth, E, R> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const log = yield* EventLog
      let down: string | undefined
      // Only the changes are logged: an operator sees when the log went away, why, and when it came back.
      const markDown = (e: LogUnavailable) =>
        Effect.suspend(() => {
          const was = down
          down = e.message
          return was === undefined ? Effect.logWarning(`the event log is unavailable: ${e.message}`) : Effect.void
        })
      const markUp = Effect.suspend(() => {
        const was = down
        down = undefined
        return was === undefined ? Effect.void : Effect.logInfo("the event log is reachable again")
      })
      const onFailure = <A, Err>(effect: Effect.Effect<A, Err>) =>
        Effect.tapError(effect, (e) => (isUnavailable(e) ? markDown(e) : Effect.void))
      const onStreamFailure = <A, Err>(stream: Stream.Stream<A, Err>) =>
        Stream.tapError(stream, (e) => (isUnavailable(e) ? markDown(e) : Effect.void))

      const probe = log.probe.pipe(
        Effect.timeoutFail({
          duration: PROBE_TIMEOUT,
          onTimeout: () => new LogUnavailable({ message: `the event log did not answer within ${Duration.format(PROBE_TIMEOUT)}` }),
        }),
        Effect.matchEffect({ onFailure: markDown, onSuccess: () => markUp }),
      )
      yield* Effect.forkScoped(
        Effect.forever(Effect.zipRight(probe, Effect.suspend(() => Effect.sleep(down === undefined ? PROBE_WHILE_UP : PROBE_WHILE_DOWN)))),
      )

      const watchedLog: EventLogShape = {
        ...log,
        // An expectation that failed was answered by the log all the same.
        append: (messages) =>
          log.append(messages).pipe(
            Effect.tapBoth({ onFailure: (e) => (e._tag === "LogUnavailable" ? markDown(e) : markUp), onSuccess: () => markUp }),
          ),
        read: (filter, fromSeq, options) => onStreamFailure(log.read(filter, fromSeq, options)),
        follow: (filter, fromSeq, options) => onStreamFailure(log.follow(filter, fromSeq, options)),
        readMessage: (subject, firstSeq, seq) => onFailure(log.readMessage(subject, firstSeq, seq)),
        lastSeq: onFailure(log.lastSeq),
        purge: (filter) => onFailure(log.purge(filter)),
      }
      return Context.make(EventLog, watchedLog).pipe(Context.add(LogHealth, { unavailable: () => down }))
    }),
  ).pipe(Layer.provide(inner))

const isUnavailable = (e: unknown): e is LogUnavailable => e instanceof LogUnavailable
