import { Deferred, Effect, FiberId } from "effect"

/**
 * `run`, shared by the callers that wait at once: a caller joins the next run that has not started
 * yet (never one already under way, whose answer may predate it), and at most one runs at a time.
 * However many readers ask the log for its head at once, the log is asked once or twice.
 */
export const sharedNextRun = <A, E>(run: Effect.Effect<A, E>): Effect.Effect<A, E> => {
  let running = false
  // The next run's callers, until it starts.
  let waiting: Deferred.Deferred<A, E> | undefined

  const startNext: Effect.Effect<void> = Effect.suspend(() => {
    const joined = waiting
    if (joined === undefined) {
      running = false
      return Effect.void
    }
    waiting = undefined
    return Effect.exit(run).pipe(
      Effect.flatMap((exit) => Deferred.done(joined, exit)),
      Effect.zipRight(startNext),
    )
  })

  // The bookkeeping is one synchronous step, so no other fiber runs between the check and the change.
  return Effect.suspend(() => {
    let joined = waiting
    if (joined === undefined) {
      joined = waiting = Deferred.unsafeMake<A, E>(FiberId.none)
      if (!running) {
        running = true
        return Effect.zipRight(Effect.forkDaemon(startNext), Deferred.await(joined))
      }
    }
    return Deferred.await(joined)
  })
}

/**
 * `sharedNextRun` for plain code, whose callers run no fiber (the HTTP fronts' reads, where a fiber, its
 * fork and its timeout each read cost more than the read itself): the same sharing, the next run begun
 * in a microtask so that the callers of one turn of the loop share it.
 */
export const sharedNextCall = <A>(run: () => Promise<A>): (() => Promise<A>) => {
  let running = false
  let waiting: Resolvers<A> | undefined

  const startNext = (): void => {
    const joined = waiting
    if (joined === undefined) {
      running = false
      return
    }
    waiting = undefined
    // A run that throws as it starts fails its callers like one that rejects.
    new Promise<A>((resolve) => resolve(run())).then(joined.resolve, joined.reject).then(startNext)
  }

  return () => {
    let joined = waiting
    if (joined === undefined) {
      joined = waiting = withResolvers<A>()
      if (!running) {
        running = true
        queueMicrotask(startNext)
      }
    }
    return joined.promise
  }
}

interface Resolvers<A> {
  readonly promise: Promise<A>
  readonly resolve: (value: A) => void
  readonly reject: (reason: unknown) => void
}

// Promise.withResolvers is Node 22's.
const withResolvers = <A>(): Resolvers<A> => {
  let resolve!: (value: A) => void
  let reject!: (reason: unknown) => void
  const promise = new Promise<A>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}
