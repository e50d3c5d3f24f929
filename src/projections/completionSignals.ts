import { Deferred, Effect, Exit, FiberId } from "effect"

/**
 * Per account, the next window that adds completion events to its feed, told once that window has
 * committed. A reader takes the signal before it reads the feed and awaits it after, so no completion
 * falls between the two; every reader of an account shares one Deferred.
 */
export const makeCompletionSignals = (onWait: () => void = () => {}) => {
  const next = new Map<string, Deferred.Deferred<void>>()
  const done = (accountId: string) => {
    const deferred = next.get(accountId)
    if (deferred === undefined) return
    next.delete(accountId)
    Deferred.unsafeDone(deferred, Exit.void)
  }
  return {
    /** Taking it registers the wait; the effect it gives completes with the account's next completions. */
    signal: (accountId: string): Effect.Effect<Effect.Effect<void>> =>
      Effect.sync(() => {
        let deferred = next.get(accountId)
        if (deferred === undefined) {
          deferred = Deferred.unsafeMake<void>(FiberId.none)
          next.set(accountId, deferred)
          onWait()
        }
        return Deferred.await(deferred)
      }),
    fire: (accountIds: Iterable<string>) => {
      for (const accountId of accountIds) done(accountId)
    },
    /** Whether a reader waits for an account's next completions: the projections then apply what arrives at once. */
    waiting: () => next.size > 0,
    /** The read model was replaced wholesale (a rebuild): every reader reads again. */
    fireAll: () => {
      for (const accountId of [...next.keys()]) done(accountId)
    },
  }
}
