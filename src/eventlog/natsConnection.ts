import { connect, type NatsConnection } from "@nats-io/transport-node"
import { Effect, Schedule, type Scope } from "effect"
import { LogUnavailable } from "./EventLog.js"
import { natsServers } from "./JetStreamEventLog.js"

/**
 * A connection of its own to the deployment's NATS for one part of Sluice (`purpose`: the leases, load
 * sharing, …), for the scope: it reconnects for good while NATS is away, and is closed when the scope ends.
 */
export const scopedNatsConnection = (url: string, purpose: string): Effect.Effect<NatsConnection, LogUnavailable, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () =>
        connect({
          servers: natsServers(url),
          maxReconnectAttempts: -1,
          reconnectTimeWait: 500,
          noAsyncTraces: true,
          name: `sluice-${purpose.replace(/\W+/g, "-")}`,
        }),
      catch: (cause) =>
        new LogUnavailable({ message: `cannot connect to ${url} for ${purpose}: ${cause instanceof Error ? cause.message : String(cause)}`, cause }),
    }),
    (nc) => Effect.promise(() => nc.close().catch(() => undefined)),
  )

/**
 * A start-up step on NATS (a stream or bucket made or bound), tried again for a while: instances started
 * together make the same ones together, and a new replicated one answers only once its replicas have
 * elected a leader, timing out until then. `retryIf` says which failures are worth waiting out.
 */
export const retriedAtStart = <A, E extends { readonly message: string }, R>(
  step: Effect.Effect<A, E, R>,
  retryIf: (e: E) => boolean = () => true,
): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    // Each different failure is logged once, not every half second.
    let said = ""
    return step.pipe(
      Effect.tapError((e) => {
        if (!retryIf(e) || e.message === said) return Effect.void
        said = e.message
        return Effect.logWarning(`${e.message}; trying again for up to a minute`)
      }),
      Effect.retry({ schedule: Schedule.spaced("500 millis").pipe(Schedule.upTo("60 seconds")), while: retryIf }),
    )
  })
