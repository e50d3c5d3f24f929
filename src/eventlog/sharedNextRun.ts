import { Deferred, Effect, FiberId } from "effect"

/**
 * `run`, shared by the callers that wait at once: a caller joins the next run that starts after it
 * arrived (never one already under way, whose answer may predate it), and at most one runs at a time.
 * However many readers ask the log for its head in a moment, the log is asked once or twice.
 */
export const sharedNextRun = <A, E>(run: Effect.Effect<A, E>): Effect.Effect<A, E> => {
  let running = false
  let next: Deferred.Deferred<A, E> | undefined

  const launch = (waiting: Deferred.Deferred<A, E>): Effect.Effect<void> =>
    Effect.asVoid(
      Effect.forkDaemon(
        Effect.exit(run).pipe(
          Effect.flatMap((exit) => Deferred.done(waiting, exit)),
          Effect.zipRight(
            Effect.suspend(() => {
              const queued = next
              next = undefined
              if (queued === undefined) {
                running = false
                return Effect.void
              }
              return launch(queued)
            }),
          ),
        ),
      ),
    )

  // The bookkeeping is one synchronous step, so no other fiber runs between the check and the change.
  return Effect.suspend(() => {
    const waiting = next ?? Deferred.unsafeMake<A, E>(FiberId.none)
    if (running) {
      next = waiting
      return Deferred.await(waiting)
    }
    running = true
    return Effect.zipRight(launch(waiting), Deferred.await(waiting))
  })
}
