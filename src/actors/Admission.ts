import { Clock, Context, Duration, Effect, FiberSet, Layer, Queue } from "effect"
import { batchesToFail } from "../domain/account/batchesToFail.js"
import { verdict } from "../domain/account/ownerVerdict.js"
import type { AccountStanding } from "../domain/waiting/waitingOn.js"
import { nextUtcMidnight } from "../domain/account/utcDay.js"
import { OwnerReads } from "../projections/ownerReads.js"
import { Projector } from "../projections/Projector.js"
import { Accounts } from "./Accounts.js"
import { makeAccountSlots } from "./admission/accountSlots.js"
import { makeBatchFailures } from "./admission/batchFailures.js"
import { makeKeyExpiryWatch } from "./admission/keyExpiryWatch.js"
import { makeOwnerCache } from "./admission/ownerCache.js"
import { BatchWriter } from "./BatchWriter.js"
import { LoadSharing } from "./LoadSharing.js"

/**
 * Whether a batch row may start now, on behalf of its account: the owner's key and account still
 * valid, daily quota left, batch access, and a free concurrent-request slot. A row that may not
 * start stays queued; its model actor passes over to other accounts and is woken on a change.
 */
export interface AdmissionShape {
  readonly mayStart: (accountId: string, batchId: string) => boolean
  /** A batch row of the account starts (it holds one of the account's concurrent-request slots) / ends. */
  readonly acquire: (accountId: string) => void
  readonly release: (accountId: string) => void
  /** Calls `listener` whenever a row that could not start may be able to now. */
  readonly onChange: (listener: () => void) => void
  /**
   * An interactive request of the account takes one of its concurrent-request slots; false when
   * every slot is in use (the request is then answered 429). Each `true` is paired with a release.
   */
  readonly tryAcquireInteractive: (accountId: string) => boolean
  /**
   * Waits a moment while the account has a free slot but the other instances have not yet read this
   * instance's last requests of it (see LoadSharing), so that `tryAcquireInteractive` can take it.
   */
  readonly awaitInteractiveRoom: (accountId: string) => Effect.Effect<void>
  readonly releaseInteractive: (accountId: string) => void
  /** What the account's checks answer for a batch created with `keyId` now, read without acting on it (for waiting_on). */
  readonly standing: (accountId: string, keyId: string) => AccountStanding
}

/** Report rounds an interactive request waits for the others to read this instance's requests, at most. */
const INTERACTIVE_ROUNDS = 20
/** ... and wall-clock time: the wait is for other processes, not a rule of the actors' clock. */
const INTERACTIVE_WAIT = Duration.seconds(1)
const wallClock = Clock.make()

const makeLive = Effect.gen(function* () {
  const reads = yield* OwnerReads
  const accounts = yield* Accounts
  const writer = yield* BatchWriter
  const projector = yield* Projector
  const sharing = yield* LoadSharing
  // Captured at construction: expiry and midnight follow the clock the actors were built with.
  const clock = yield* Effect.clock
  const fork = yield* FiberSet.makeRuntime<never, void, never>()
  const listeners: Array<() => void> = []
  const notify = () => {
    for (const listener of listeners) listener()
  }

  // Only the counts of accounts with a limit are worth telling the others (a count back to 0 always is).
  const slots = makeAccountSlots((accountId, inUse) => {
    if (inUse === 0 || owners.account(accountId)?.concurrency != null) sharing.setAccount(accountId, inUse)
  })
  const failures = makeBatchFailures(writer, fork, notify)
  /** Fails every open batch of the account whose key or account is no longer valid. */
  const sweep = (accountId: string) => {
    const batches = reads.openBatches(accountId).map((b) => ({ id: b.id, key: owners.key(accountId, b.key_id) }))
    for (const { id, error } of batchesToFail(owners.account(accountId), batches, clock.unsafeCurrentTimeMillis())) {
      failures.fail(id, error)
    }
  }
  const watchExpiry = makeKeyExpiryWatch(clock, fork, sweep)
  const owners = makeOwnerCache(reads, accounts.get, watchExpiry)
  // The verdict counts this instance's slots; the others' requests are LoadSharing's to count.
  const hasFreeSlot = (accountId: string) => {
    const concurrency = owners.account(accountId)?.concurrency ?? null
    return concurrency === null || sharing.mayTake(accountId, slots.inUse(accountId), concurrency)
  }
  const tryAcquireInteractive = (accountId: string) => {
    if (!hasFreeSlot(accountId)) return false
    slots.acquireInteractive(accountId)
    return true
  }
  const waitsForOthers = (accountId: string) => {
    const concurrency = owners.account(accountId)?.concurrency ?? null
    return concurrency !== null && sharing.waitsForOthers(accountId, slots.inUse(accountId), concurrency)
  }
  const awaitInteractiveRoom = (accountId: string, rounds = INTERACTIVE_ROUNDS): Effect.Effect<void> =>
    Effect.suspend(() =>
      rounds <= 0 || !waitsForOthers(accountId)
        ? Effect.void
        : Effect.zipRight(sharing.nextReports, awaitInteractiveRoom(accountId, rounds - 1)),
    )

  const mayStart = (accountId: string, batchId: string) => {
    const failed = failures.state(batchId)
    if (failed === "writing") return false
    const keyId = owners.batchKey(batchId)
    // A failed or deleted batch's rows are let through to drain them from their model's queue: the
    // batch's writer starts none of them.
    if (keyId === undefined || failed === "written") return hasFreeSlot(accountId)
    const now = clock.unsafeCurrentTimeMillis()
    const decided = verdict(
      {
        account: owners.account(accountId),
        key: owners.key(accountId, keyId),
        usedTodayUsd: owners.usedToday(accountId, now),
        slotsInUse: slots.inUse(accountId),
      },
      now,
    )
    switch (decided._tag) {
      case "Run":
        if (hasFreeSlot(accountId)) return true
        slots.refused(accountId)
        return false
      case "FailBatch":
        failures.fail(batchId, decided.error)
        return false
      case "Full":
        slots.refused(accountId)
        return false
      case "Pause":
      case "Wait":
        return false
    }
  }

  /** The rows of every instance count: a reader runs none of the account's rows itself. */
  const standing = (accountId: string, keyId: string): AccountStanding => {
    const now = clock.unsafeCurrentTimeMillis()
    const account = owners.account(accountId)
    const inUse = slots.inUse(accountId)
    const decided = verdict({ account, key: owners.key(accountId, keyId), usedTodayUsd: owners.usedToday(accountId, now), slotsInUse: inUse }, now)
    const concurrency = account?.concurrency ?? null
    switch (decided._tag) {
      case "Run":
        return concurrency !== null && inUse + sharing.accountElsewhere(accountId) >= concurrency ? { _tag: "Full", concurrency } : { _tag: "Run" }
      case "Full":
        return { _tag: "Full", concurrency }
      case "Pause":
        return { _tag: "Pause", until: decided.until }
      case "Wait":
        return { _tag: "Wait" }
      case "FailBatch":
        return { _tag: "FailBatch" }
    }
  }

  sharing.onReports(() => {
    if (slots.forgetRefused()) notify()
  })
  const changes = yield* projector.accountChanges
  yield* Queue.take(changes).pipe(
    Effect.map((changed) => {
      owners.invalidate(changed)
      for (const id of changed.settings) {
        sweep(id)
        if (owners.account(id)?.concurrency != null) sharing.setAccount(id, slots.inUse(id))
      }
      if (changed.settings.size > 0) notify()
    }),
    Effect.forever,
    Effect.forkScoped,
  )
  // A used-up quota renews at 00:00 UTC: the paused rows are looked at again then.
  yield* Effect.gen(function* () {
    const now = yield* clock.currentTimeMillis
    yield* clock.sleep(Duration.millis(nextUtcMidnight(now) - now))
    notify()
  }).pipe(Effect.forever, Effect.forkScoped)

  return {
    mayStart,
    acquire: slots.acquire,
    release: (accountId) => {
      if (slots.release(accountId)) notify()
    },
    onChange: (listener) => {
      listeners.push(listener)
    },
    tryAcquireInteractive,
    awaitInteractiveRoom: (accountId) =>
      awaitInteractiveRoom(accountId).pipe(Effect.timeout(INTERACTIVE_WAIT), Effect.ignore, Effect.withClock(wallClock)),
    releaseInteractive: (accountId) => {
      if (slots.releaseInteractive(accountId)) notify()
    },
    standing,
  } satisfies AdmissionShape
})

export class Admission extends Context.Tag("Actors/Admission")<Admission, AdmissionShape>() {
  /** Every row may start: no owner checks, quota or account slots. */
  static readonly open = Layer.succeed(Admission, {
    mayStart: () => true,
    acquire: () => undefined,
    release: () => undefined,
    onChange: () => undefined,
    tryAcquireInteractive: () => true,
    awaitInteractiveRoom: () => Effect.void,
    releaseInteractive: () => undefined,
    standing: () => ({ _tag: "Run" }),
  })

  /**
   * The owner's key, account, daily quota, batch access and concurrent-request slots, checked before
   * every row. A batch whose key or account is no longer valid is failed (once, by whichever check
   * sees it first: a row's, or a change to the account or key); the others wait for a change. The
   * account's slots are shared with the other instances through LoadSharing.
   */
  static readonly live = Layer.scoped(Admission, makeLive).pipe(Layer.provide(OwnerReads.layer))
}
