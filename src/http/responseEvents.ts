import { Deferred, Duration, Effect } from "effect"
import { Gauge } from "prom-client"
import { ActorClock } from "../actors/ActorClock.js"
import type { CompletionEventList } from "../domain/api/CompletionEvent.js"
import { EventLog } from "../eventlog/EventLog.js"
import { LogHealth } from "../eventlog/LogHealth.js"
import { sharedNextRun } from "../eventlog/sharedNextRun.js"
import { Metrics } from "../metrics/Metrics.js"
import { completionReads, type FeedPage } from "../projections/completionReads.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import { streamReads } from "../projections/streamReads.js"
import { streamNotFound } from "./streams.js"
import type { Caller } from "./auth.js"
import { logUnavailable } from "./errors.js"
import { EventStreamsClosing } from "./eventsStreamClosing.js"
import { type FeedParams, parseFeedQuery } from "./responseEventsParams.js"
import { HttpSettings } from "./settings.js"

const FRESH_READ_WAIT = "2 seconds"

const listOf = (page: FeedPage): CompletionEventList => ({ object: "list", data: page.data, has_more: page.hasMore })

/**
 * `GET /v1/responses/events`: a page of the caller's completion events. With nothing after its cursor
 * the call waits, on the actors' clock, until the projections commit a completion of the caller's or
 * `wait_ms` is up, whichever comes first, and ends its wait when the server shuts down.
 */
export class ResponseEvents extends Effect.Service<ResponseEvents>()("Http/ResponseEvents", {
  effect: Effect.gen(function* () {
    const reads = completionReads(yield* ReadModel)
    const streams = streamReads(yield* ReadModel)
    const projector = yield* Projector
    const clock = yield* ActorClock
    const closing = yield* EventStreamsClosing
    const log = yield* EventLog
    const health = yield* LogHealth
    const settings = yield* HttpSettings
    let waiting = 0
    new Gauge({
      name: "sluice_completion_feed_waiting",
      help: "Calls to GET /v1/responses/events waiting for a completion (long polls) now",
      registers: [(yield* Metrics).registry],
      collect() {
        this.set(waiting)
      },
    })

    const unavailable = (why: string) => logUnavailable("The completion-events feed is unavailable at the moment: the event log cannot be reached", why)
    // As every read: with several instances on the log, the read model first catches up with its head (bounded).
    const head = sharedNextRun(log.lastSeq)
    const reachable = Effect.suspend(() => {
      const why = health.unavailable()
      if (why !== undefined) return Effect.fail(unavailable(why))
      if (settings.freshReads !== true) return Effect.void
      return Effect.flatMap(head, (seq) => Effect.timeoutOption(projector.awaitSeq(seq), FRESH_READ_WAIT)).pipe(
        Effect.mapError((e) => unavailable(e.message)),
        Effect.asVoid,
      )
    })

    /** Whether `signal` came before `ms` on the actors' clock (false too once the server is shutting down). */
    const woken = (signal: Effect.Effect<void>, ms: number) =>
      Effect.acquireUseRelease(
        Effect.sync(() => waiting++),
        () =>
          Effect.raceAll([
            Effect.as(signal, true),
            Effect.as(clock.sleep(Duration.millis(ms)), false),
            Effect.as(Deferred.await(closing), false),
          ]),
        () => Effect.sync(() => waiting--),
      )

    const page = (caller: Caller, params: FeedParams) =>
      Effect.gen(function* () {
        yield* reachable
        const query = yield* parseFeedQuery(params)
        if (query.streamId !== null && streams.ofAccount(caller.account.id, query.streamId) === undefined) {
          return yield* Effect.fail(streamNotFound(query.streamId))
        }
        const read = () => reads.page(caller.account.id, query.streamId, query.from, query.limit)
        // Nothing arrives before a cursor: only a page forward, or the newest, waits.
        if (query.waitMs === 0 || query.from.kind === "before") return listOf(read())
        const deadline = (yield* clock.currentTimeMillis) + query.waitMs
        for (;;) {
          const next = yield* projector.completionSignal(caller.account.id)
          const found = read()
          const left = deadline - (yield* clock.currentTimeMillis)
          if (found.data.length > 0 || left <= 0) return listOf(found)
          if (!(yield* woken(next, left))) return listOf(read())
        }
      })

    return { page } as const
  }),
}) {}
