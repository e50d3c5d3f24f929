import { type Clock, Effect } from "effect"

// Node's timers hold at most 2^31-1 ms (about 24.8 days) and Effect never wakes a longer sleep.
const LONGEST_SLEEP_MS = 86_400_000

/**
 * Runs `action` once `clock` reads `deadline` (Unix ms) or later, the action on that clock too: a timer
 * planned from a request's fiber still runs on the actors' clock.
 */
export const atDeadline = <A, E, R>(clock: Clock.Clock, deadline: number, action: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    for (let now = yield* clock.currentTimeMillis; now < deadline; now = yield* clock.currentTimeMillis) {
      yield* Effect.sleep(Math.min(deadline - now, LONGEST_SLEEP_MS))
    }
    return yield* action
  }).pipe(Effect.withClock(clock))
