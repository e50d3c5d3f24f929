import { Context, Duration, Effect, Either, Exit, FiberSet, Layer, Queue, Schedule } from "effect"
import { authorizedAccount, type OwnerError, type OwnerKey, slotsFull, verdict } from "../domain/account/ownerVerdict.js"
import { DAY_MS, nextUtcMidnight, utcDay } from "../domain/account/utcDay.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import { usedUsd } from "../projections/usageReads.js"
import { type Account, Accounts } from "./Accounts.js"
import { BatchWriter } from "./BatchWriter.js"

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
  readonly releaseInteractive: (accountId: string) => void
}

interface CachedOwner {
  readonly account: Account | undefined
  usage: { readonly day: number; readonly usd: number } | undefined
  readonly keys: Map<string, OwnerKey | undefined>
}

const LOG_RETRY = Schedule.exponential("100 millis").pipe(Schedule.union(Schedule.spaced("2 seconds")))
const CACHE_LIMIT = 100_000

const bump = (counts: Map<string, number>, accountId: string, by: number) => {
  const n = (counts.get(accountId) ?? 0) + by
  if (n > 0) counts.set(accountId, n)
  else counts.delete(accountId)
}

/**
 * Every row's check reads only memory: accounts, keys and today's usage are cached per account and
 * dropped when the projections report a change to them, so thousands of rows a second run no SQL.
 */
const makeLive = Effect.gen(function* () {
  const db = yield* ReadModel
  const accounts = yield* Accounts
  const writer = yield* BatchWriter
  const projector = yield* Projector
  // Captured at construction: expiry and midnight follow the clock the actors were built with.
  const clock = yield* Effect.clock
  const run = yield* FiberSet.makeRuntime<never, void, never>()
  const s = {
    batchKey: db.prepare(`SELECT key_id FROM batches WHERE id = ?`),
    key: db.prepare(`SELECT revoked_at, expires_at FROM api_keys WHERE id = ?`),
    unfinished: db.prepare(
      `SELECT id, key_id FROM batches WHERE account_id = ? AND status IN ('validating', 'in_progress') AND closing IS NULL`,
    ),
  }
  const owners = new Map<string, CachedOwner>()
  const batchKeys = new Map<string, string>()
  const running = new Map<string, number>()
  const interactive = new Map<string, number>()
  /** Accounts a row was refused for want of a slot since their last release: only their releases wake the actors. */
  const refusedFull = new Set<string>()
  /** Batches whose owner lost the right to run them: their failure is being written, or is written. */
  const failing = new Map<string, "writing" | "written">()
  const watchedExpiries = new Set<string>()
  const listeners: Array<() => void> = []
  const notify = () => {
    for (const listener of listeners) listener()
  }

  const owner = (accountId: string): CachedOwner => {
    let cached = owners.get(accountId)
    if (cached === undefined) {
      cached = { account: accounts.get(accountId), usage: undefined, keys: new Map() }
      owners.set(accountId, cached)
    }
    return cached
  }
  const keyOf = (accountId: string, cached: CachedOwner, keyId: string) => {
    if (cached.keys.has(keyId)) return cached.keys.get(keyId)
    const row = s.key.get(keyId) as { revoked_at: number | null; expires_at: number | null } | undefined
    const key = row === undefined ? undefined : { revoked: row.revoked_at !== null, expires_at: row.expires_at }
    cached.keys.set(keyId, key)
    if (key?.expires_at != null) watchExpiry(accountId, keyId, key.expires_at * 1000)
    return key
  }
  const usedToday = (accountId: string, cached: CachedOwner, now: number) => {
    if (cached.account?.daily_quota_usd == null) return 0
    const day = utcDay(now)
    if (cached.usage?.day !== day) cached.usage = { day, usd: usedUsd(db, accountId, day) }
    return cached.usage.usd
  }
  const batchKey = (batchId: string) => {
    const known = batchKeys.get(batchId)
    if (known !== undefined) return known
    const row = s.batchKey.get(batchId) as { key_id: string } | undefined
    if (row === undefined) return undefined
    if (batchKeys.size >= CACHE_LIMIT) batchKeys.clear()
    batchKeys.set(batchId, row.key_id)
    return row.key_id
  }
  const slotsInUse = (accountId: string) => (running.get(accountId) ?? 0) + (interactive.get(accountId) ?? 0)
  const hasFreeSlot = (accountId: string) => !slotsFull(owner(accountId).account?.concurrency ?? null, slotsInUse(accountId))

  // A forgotten batch is failed again if its rows come by: the decider answers that with no event.
  const forgetWritten = () => {
    for (const [id, state] of failing) if (state === "written") failing.delete(id)
  }
  const failBatch = (batchId: string, error: OwnerError) => {
    if (failing.has(batchId)) return
    if (failing.size >= CACHE_LIMIT) forgetWritten()
    failing.set(batchId, "writing")
    run(
      Effect.gen(function* () {
        yield* writer.execute(batchId, { type: "Fail", at: yield* writer.now, error }).pipe(
          Effect.retry({ schedule: LOG_RETRY, while: (e) => e._tag === "LogUnavailable" }),
          Effect.catchTag("BatchNotFound", () => Effect.void),
        )
      }).pipe(
        Effect.onExit((exit) =>
          Effect.sync(() => {
            // Only a failure in the log lets the batch's rows drain; otherwise the next check tries again.
            if (Exit.isSuccess(exit)) failing.set(batchId, "written")
            else failing.delete(batchId)
            notify()
          }),
        ),
        Effect.catchAllCause((cause) => Effect.logError(`batch ${batchId} could not be failed for its owner`, cause)),
      ),
    )
  }

  /** Fails every unfinished batch of the account whose key or account is no longer valid. */
  const sweep = (accountId: string) => {
    const now = clock.unsafeCurrentTimeMillis()
    const cached = owner(accountId)
    for (const batch of s.unfinished.all(accountId) as Array<{ id: string; key_id: string }>) {
      const authorized = authorizedAccount(cached.account, keyOf(accountId, cached, batch.key_id), now)
      if (Either.isLeft(authorized)) failBatch(batch.id, authorized.left)
    }
  }

  const sleepUntil = (at: number) =>
    Effect.gen(function* () {
      // Timers cap at about 24.8 days, so a far expiry is reached a day at a time.
      for (let now = yield* clock.currentTimeMillis; now < at; now = yield* clock.currentTimeMillis) {
        yield* clock.sleep(Duration.millis(Math.min(at - now, DAY_MS)))
      }
    })
  // A batch that nothing else looks at (all its rows waiting, paused or queued behind others) still
  // fails when its key expires.
  const watchExpiry = (accountId: string, keyId: string, at: number) => {
    if (watchedExpiries.has(keyId) || at <= clock.unsafeCurrentTimeMillis()) return
    watchedExpiries.add(keyId)
    run(sleepUntil(at).pipe(Effect.andThen(Effect.sync(() => sweep(accountId)))))
  }

  const mayStart = (accountId: string, batchId: string) => {
    const failed = failing.get(batchId)
    if (failed === "writing") return false
    const keyId = batchKey(batchId)
    // A failed or deleted batch's rows are let through to drain them from their model's queue: the
    // batch's writer starts none of them.
    if (keyId === undefined || failed === "written") return hasFreeSlot(accountId)
    const now = clock.unsafeCurrentTimeMillis()
    const cached = owner(accountId)
    const decided = verdict(
      {
        account: cached.account,
        key: keyOf(accountId, cached, keyId),
        usedTodayUsd: usedToday(accountId, cached, now),
        slotsInUse: slotsInUse(accountId),
      },
      now,
    )
    switch (decided._tag) {
      case "Run":
        return true
      case "FailBatch":
        failBatch(batchId, decided.error)
        return false
      case "Full":
        refusedFull.add(accountId)
        return false
      case "Pause":
      case "Wait":
        return false
    }
  }

  const freed = (accountId: string) => {
    if (refusedFull.delete(accountId)) notify()
  }

  const changes = yield* projector.accountChanges
  yield* Effect.forkScoped(
    Effect.forever(
      Effect.gen(function* () {
        const { settings, usage } = yield* Queue.take(changes)
        for (const id of usage) {
          const cached = owners.get(id)
          if (cached !== undefined) cached.usage = undefined
        }
        for (const id of settings) {
          owners.delete(id)
          sweep(id)
        }
        if (settings.size > 0) notify()
      }),
    ),
  )
  // A used-up quota renews at 00:00 UTC: the paused rows are looked at again then.
  yield* Effect.forkScoped(
    Effect.forever(
      Effect.gen(function* () {
        const now = yield* clock.currentTimeMillis
        yield* clock.sleep(Duration.millis(nextUtcMidnight(now) - now))
        notify()
      }),
    ),
  )

  return {
    mayStart,
    acquire: (accountId) => bump(running, accountId, 1),
    release: (accountId) => {
      bump(running, accountId, -1)
      freed(accountId)
    },
    onChange: (listener) => {
      listeners.push(listener)
    },
    tryAcquireInteractive: (accountId) => {
      if (!hasFreeSlot(accountId)) return false
      bump(interactive, accountId, 1)
      return true
    },
    releaseInteractive: (accountId) => {
      bump(interactive, accountId, -1)
      freed(accountId)
    },
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
    releaseInteractive: () => undefined,
  })

  /**
   * The owner's key, account, daily quota, batch access and concurrent-request slots, checked before
   * every row. A batch whose key or account is no longer valid is failed (once, by whichever check
   * sees it first: a row's, or a change to the account or key); the others wait for a change.
   */
  static readonly live = Layer.scoped(Admission, makeLive)
}
