import { jetstreamManager } from "@nats-io/jetstream"
import { connect, type NatsConnection } from "@nats-io/transport-node"
import type Database from "better-sqlite3"
import { writtenByCalls } from "../../domain/batch/subjects.js"
import { lastSeqOn, natsServers, SLUICE_STREAM } from "../../eventlog/JetStreamEventLog.js"
import { sharedNextCall } from "../../eventlog/sharedNextRun.js"

/** How long the front's connection waits to connect and a request for its answer. */
const ASK_TIMEOUT_MS = 2_000
/**
 * How long a read waits for the shared ask before leaving its freshness to the dispatch process:
 * longer than the ask takes under full load (p99 about 50 ms on two cores), short enough that a log
 * electing a leader or healing does not add its wait to the dispatch process's own.
 */
const READ_WAIT_MS = 250

export interface FrontFreshness {
  /**
   * Whether this front's read model holds what every call wrote before now (freshReads.ts), asked of
   * the log by the front itself; false when it is behind, or the log did not answer.
   */
  readonly caughtUp: () => Promise<boolean>
}

/**
 * A front's reads on NATS, each of which must show what any instance's call wrote before it began,
 * ask the log for the last message a call wrote over a connection of the front's own, and find how far
 * the read model has applied in the read model itself. Asking through the dispatch process put every
 * read through a turn of its loop and a message each way, and a read waited for that loop under load:
 * only a read model behind what the calls wrote (or a log that does not answer in READ_WAIT) leaves a
 * read to the dispatch process, which answers once its projections have applied it (woken, not polling).
 */
export const makeFrontFreshness = async (
  url: string,
  db: Database.Database,
  stream = SLUICE_STREAM,
): Promise<FrontFreshness> => {
  const nc: NatsConnection = await connect({
    servers: natsServers(url),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    noAsyncTraces: true,
    timeout: ASK_TIMEOUT_MS,
    name: "sluice-front",
  })
  const jsm = await jetstreamManager(nc, { timeout: ASK_TIMEOUT_MS })
  // Hundreds of reads at once ask the log once or twice, not once each.
  const written = sharedNextCall(() => lastSeqOn(jsm, stream, writtenByCalls))
  const applied = db.prepare<[], number | null>(`SELECT min(seq) FROM offsets`).pluck()
  return {
    // Plain promises and a timer: a fiber for the ask and another for its timeout cost the front about 0.4 ms
    // of CPU a read, a third of all it spent on one.
    caughtUp: () =>
      new Promise<boolean>((resolve, reject) => {
        const timer = setTimeout(() => resolve(false), READ_WAIT_MS)
        written().then(
          (seq) => {
            clearTimeout(timer)
            // A read model that cannot be read (a file replaced under it) fails the read, which the
            // dispatch process then answers (frontMain.ts), rather than leaving a rejection nobody handles.
            try {
              resolve((applied.get() ?? 0) >= seq)
            } catch (error) {
              reject(error)
            }
          },
          () => {
            clearTimeout(timer)
            resolve(false)
          },
        )
      }),
  }
}
