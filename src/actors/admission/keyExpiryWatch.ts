import { type Clock, Duration, Effect } from "effect"
import { DAY_MS } from "../../domain/account/utcDay.js"

/** Sleeps on `clock` until `at` (ms); timers cap at about 24.8 days, so a far time is reached a day at a time. */
export const sleepUntil = (clock: Clock.Clock, at: number) =>
  Effect.gen(function* () {
    for (let now = yield* clock.currentTimeMillis; now < at; now = yield* clock.currentTimeMillis) {
      yield* clock.sleep(Duration.millis(Math.min(at - now, DAY_MS)))
    }
  })

/**
 * Runs `expired(accountId)` when a key expires, once per key, on the actors' clock: a batch that nothing
 * else looks at (all its rows waiting, paused or queued behind others) still fails when its key expires.
 */
export const makeKeyExpiryWatch = (
  clock: Clock.Clock,
  fork: (effect: Effect.Effect<void>) => void,
  expired: (accountId: string) => void,
) => {
  const watched = new Set<string>()
  return (accountId: string, keyId: string, at: number) => {
    if (watched.has(keyId) || at <= clock.unsafeCurrentTimeMillis()) return
    watched.add(keyId)
    fork(sleepUntil(clock, at).pipe(Effect.andThen(Effect.sync(() => expired(accountId)))))
  }
}
