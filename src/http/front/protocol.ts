import type { Eta } from "../eta.js"
import type { WaitingOn } from "../../domain/waiting/waitingOn.js"
import type { BatchRow } from "../../projections/batchReads.js"

/**
 * What an HTTP front process and the dispatch process say to each other over the cluster's IPC
 * channel. A front answers the polled reads from the read model itself. What lives in the dispatch
 * process reaches it two ways: pushed, whether the log answers (on each change); asked, a running
 * batch's queue estimate and `waiting_on` (kept a moment: liveFacts.ts), and on NATS the read
 * model's catching up with what the calls wrote when the front finds it behind (frontFreshness.ts),
 * or every fact when the actors run on a test clock.
 */
export type FrontAsk =
  /** The log's standing for a read, and the actors' time; on NATS, answered once the read model has applied what the calls wrote. */
  | { readonly t: "reach"; readonly id: number }
  /** The same, and each unfinished batch's estimate and `waiting_on` as the dispatch process sees them now. */
  | { readonly t: "live"; readonly id: number; readonly rows: ReadonlyArray<BatchRow> }

export type FrontReply =
  | { readonly t: "reply"; readonly id: number; readonly ok: false }
  | { readonly t: "reply"; readonly id: number; readonly ok: true; readonly now: number; readonly live?: ReadonlyArray<LiveFacts> }

/** The asks of one turn of a front's loop, sent together; answered together. */
export interface FrontAsks {
  readonly t: "asks"
  readonly asks: ReadonlyArray<FrontAsk>
}
export interface FrontReplies {
  readonly t: "replies"
  readonly replies: ReadonlyArray<FrontReply>
}

export interface LiveFacts {
  readonly eta: Eta
  readonly waiting: WaitingOn | null
}

/** The reads a front answered itself in one turn of its loop, for the dispatch process's request metrics. */
export interface FrontServed {
  readonly t: "served"
  readonly reads: ReadonlyArray<{ readonly method: string; readonly route: string; readonly status: number; readonly seconds: number }>
}

/** From a front: listening on the public address, or could not (its error code and message). */
export type FrontState =
  | { readonly t: "listening" }
  | { readonly t: "listen_failed"; readonly code: string | undefined; readonly message: string }

/** To a front: whether the event log answers, sent when a front starts listening and on each change. */
export interface FrontStanding {
  readonly t: "standing"
  readonly logUp: boolean
}

/** To a front: stop taking connections, finish the open ones, and exit. */
export interface FrontClose {
  readonly t: "close"
}

export type FromFront = FrontAsks | FrontServed | FrontState
export type ToFront = FrontReplies | FrontStanding | FrontClose
