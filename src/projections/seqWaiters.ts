import { Deferred, Effect, Exit, FiberId } from "effect"

/**
 * The last sequence applied, and the fibers waiting for one to be: every wait on the same sequence
 * shares one Deferred, and each advance wakes those at or below it at once. Hundreds of reads waiting
 * for the log's head (shared by `sharedNextRun`) are a handful of entries, not a stream each.
 * `onWait` runs when a fiber begins to wait for a sequence nobody waited for yet.
 */
export const makeSeqWaiters = (initial: number, onWait?: () => void) => {
  let reached = initial
  const waiting = new Map<number, Deferred.Deferred<void>>()
  return {
    reached: () => reached,
    /** Whether any fiber waits for a sequence not yet reached. */
    waited: () => waiting.size > 0,
    advance: (seq: number) => {
      if (seq <= reached) return
      reached = seq
      for (const [at, deferred] of waiting) {
        if (at > seq) continue
        waiting.delete(at)
        Deferred.unsafeDone(deferred, Exit.void)
      }
    },
    awaitSeq: (seq: number): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (seq <= reached) return Effect.void
        let deferred = waiting.get(seq)
        if (deferred === undefined) {
          deferred = Deferred.unsafeMake<void>(FiberId.none)
          waiting.set(seq, deferred)
          onWait?.()
        }
        return Deferred.await(deferred)
      }),
  }
}
