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

/** How often a waiting flex request reads its response again should no change of it be signalled. */
const RECHECK = "1 second"

/** How a flex request ended: run (answered, failed or cancelled), or not started within its wait. */
export type FlexEnd = { readonly _tag: "Ran"; readonly stored: StoredResponse } | { readonly _tag: "NotStarted"; readonly stored: StoredResponse }

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
        const stored = yield* projector.promptly(final(created.id))
        answered = true
        return stored.batch_status === "expired" && stored.row_status === "expired"
          ? ({ _tag: "NotStarted", stored } satisfies FlexEnd)
          : ({ _tag: "Ran", stored } satisfies FlexEnd)
      })

    return { run } as const
  }),
}) {}
