import { connect, type NatsConnection } from "@nats-io/transport-node"
import { Effect, type Scope } from "effect"
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
