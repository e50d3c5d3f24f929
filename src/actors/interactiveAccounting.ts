import { Context, Effect, Layer } from "effect"
import { Accounts } from "./Accounts.js"
import { Admission } from "./Admission.js"

/**
 * What an interactive request (`POST /v1/chat/completions`) owes its account: one of the account's
 * concurrent-request slots while it runs, shared with its running batch rows, and the cost of a
 * successful answer toward its daily quota.
 */
export interface InteractiveAccountingShape {
  /** Waits a moment if a slot of the account is about to be free to take here (another instance has yet to read this one's requests). */
  readonly awaitRoom: (accountId: string) => Effect.Effect<void>
  /** Takes one of the account's concurrent-request slots; false when none is free, and the request is answered 429. */
  readonly tryAcquire: (accountId: string) => boolean
  /** Gives back the slot `tryAcquire` took, once the answer has ended (completed, failed or abandoned). */
  readonly release: (accountId: string) => void
  /** A successful answer's cost (its `usage` at the model's prices), toward the account's daily quota. */
  readonly record: (accountId: string, costUsd: number) => Effect.Effect<void>
}

export class InteractiveAccounting extends Context.Tag("Actors/InteractiveAccounting")<
  InteractiveAccounting,
  InteractiveAccountingShape
>() {
  /** No slots and no quota: every request may run, and nothing is counted. */
  static readonly none = Layer.succeed(InteractiveAccounting, {
    awaitRoom: () => Effect.void,
    tryAcquire: () => true,
    release: () => undefined,
    record: () => Effect.void,
  })

  /** The account's slots as Admission keeps them (batch rows hold them too), and its usage as Accounts records it. */
  static readonly fromAdmission = Layer.effect(
    InteractiveAccounting,
    Effect.gen(function* () {
      const admission = yield* Admission
      const accounts = yield* Accounts
      return {
        awaitRoom: admission.awaitInteractiveRoom,
        tryAcquire: admission.tryAcquireInteractive,
        release: admission.releaseInteractive,
        // The answer has been given by now: a cost the log cannot take is reported, not turned into an error.
        record: (accountId, costUsd) =>
          accounts.recordUsage(accountId, costUsd).pipe(
            Effect.catchAll((e) => Effect.logWarning(`the cost of an interactive request of ${accountId} was not recorded: ${e.message}`)),
          ),
      } satisfies InteractiveAccountingShape
    }),
  )
}
