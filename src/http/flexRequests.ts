import { HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Clock, Deferred, Effect, Queue } from "effect"
import { FinalBatchStatuses } from "../domain/api/BatchStatus.js"
import type { QueuedResponse } from "../domain/response/queuedResponse.js"
import type { ValidResponseRequest } from "../domain/response/validateRequest.js"
import { Projector } from "../projections/Projector.js"
import type { StoredResponse } from "../projections/responseReads.js"
import type { Caller } from "./auth.js"
import { QueuedResponses } from "./queuedResponses.js"
import { EventStreamsClosing } from "./eventsStreamClosing.js"

/** How often a waiting flex request reads its response again should no change of it be signalled. */
const RECHECK = "1 second"

/** How a flex request ended: run (answered, failed or cancelled), or not started within its wait. */
export type FlexEnd =
  | { readonly _tag: "Ran"; readonly stored: StoredResponse }
  | { readonly _tag: "NotStarted"; readonly stored: StoredResponse }
  /** The server began to shut down first: the request was taken out of the queue (if it had not started). */
  | { readonly _tag: "ShuttingDown" }

/**
 * Flex requests: synchronous calls that wait for one of their model's batch slots, in their account's
 * turn with its batches. Each is queued as a response (a one-row batch) whose window is the wait it
 * allows; the call answers once that response is final. A client that goes away first cancels it, so a
 * request not yet started never runs.
 */
export class FlexRequests extends Effect.Service<FlexRequests>()("Http/FlexRequests", {
  scoped: Effect.gen(function* () {
    const queued = yield* QueuedResponses
    const projector = yield* Projector
    const closing = yield* EventStreamsClosing
    const waiting = new Map<string, Deferred.Deferred<void>>()
    const changes = yield* projector.batchChanges
    yield* Queue.take(changes).pipe(
      Effect.tap((window) =>
        Effect.sync(() => {
          for (const change of window) {
            const waiter = waiting.get(change.batchId)
            if (waiter !== undefined) Deferred.unsafeDone(waiter, Effect.void)
          }
        }),
      ),
      Effect.forever,
      Effect.forkScoped,
    )

    const final = (id: string): Effect.Effect<StoredResponse> =>
      Effect.gen(function* () {
        for (;;) {
          const signal = yield* Deferred.make<void>()
          waiting.set(id, signal)
          const stored = queued.reads.one(id)!
          if (FinalBatchStatuses.has(stored.batch_status as never)) return stored
          // The change signal wakes it; the recheck, on the wall clock, covers a final status no signal named.
          yield* Deferred.await(signal).pipe(Effect.timeoutOption(RECHECK), Effect.withClock(Clock.make()))
        }
      }).pipe(Effect.ensuring(Effect.sync(() => waiting.delete(id))))

    const ranOrNot = (stored: StoredResponse): FlexEnd =>
      stored.batch_status === "expired" && stored.row_status === "expired" ? { _tag: "NotStarted", stored } : { _tag: "Ran", stored }

    const run = (caller: Caller, request: ValidResponseRequest, endpoint: QueuedResponse["endpoint"], maxWaitMs: number) =>
      Effect.gen(function* () {
        const created = yield* queued.queue(caller, request, {
          background: false,
          serviceTier: "flex",
          streamId: null,
          customId: null,
          endpoint,
          windowMs: maxWaitMs,
        })
        let answered = false
        NodeHttpServerRequest.toServerResponse(yield* HttpServerRequest.HttpServerRequest).once("close", () => {
          if (!answered) Effect.runFork(queued.cancelQuietly(created.id))
        })
        // At shutdown a waiting request is answered, not held for the grace period and then cut off.
        const stored = yield* Effect.raceFirst(
          projector.promptly(final(created.id)),
          Effect.as(Deferred.await(closing), undefined),
        )
        answered = true
        if (stored === undefined) {
          // One already running finishes, and is answered, while the server lets running calls end.
          if (queued.reads.one(created.id)?.row_status === "running") return ranOrNot(yield* projector.promptly(final(created.id)))
          yield* queued.cancelQuietly(created.id)
          // Started between the read and the cancel, it ran: answered with what it brought back.
          const after = yield* projector.promptly(final(created.id))
          return after.row_status === "cancelled" || after.row_status === "queued" ? ({ _tag: "ShuttingDown" } satisfies FlexEnd) : ranOrNot(after)
        }
        return ranOrNot(stored)
      })

    return { run } as const
  }),
}) {}
