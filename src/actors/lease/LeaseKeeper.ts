import { Clock, Effect, Fiber, Schedule } from "effect"
import { leasePlan } from "../../domain/lease/assignment.js"
import type { ModelState } from "../../domain/waiting/modelState.js"
import type { LaneHold } from "./LaneHold.js"
import type { LeaseRecord, LeaseStoreShape } from "./LeaseStore.js"

/** A lease this instance holds, and how long it may act on it without a renewal. */
export interface HeldLease extends LaneHold {
  record: LeaseRecord
  /** Wall-clock ms after which it no longer writes: well before the store's TTL can drop the lease. */
  validUntil: number
}

export interface LeaseKeeperOptions {
  readonly store: LeaseStoreShape
  readonly me: string
  readonly models: ReadonlyArray<string>
  /** False for an instance that runs no models: it reads the leases (for its admin view) and takes none. */
  readonly runsModels: boolean
  /** The model's actor starts under the lease / stops (handing over: it lets its running rows finish). */
  readonly start: (lease: HeldLease) => Effect.Effect<void>
  readonly stop: (model: string, handOver: boolean) => Effect.Effect<void>
  /** What this owner publishes of a model it holds with each renewal (see LeaseRecord.state). */
  readonly stateOf?: (model: string) => ModelState | undefined
}

/** A model as the last round saw its lease: held (with what its owner published), or without a live owner since `missingSince` (ms). */
export type Ownership =
  | { readonly _tag: "Owned"; readonly state: ModelState }
  | { readonly _tag: "Unowned"; readonly missingSince: number }

/** What an admin sees of a lease. */
export interface LeaseInfo extends LeaseRecord {
  readonly nextRenewalAt: number | undefined
}

/**
 * Takes, renews and hands over this instance's model leases, on wall-clock time (the store's TTL is the
 * server's): a round every third of the TTL. A lease not renewed for 80 % of the TTL is given up here
 * before the store can give it to another; one refused at renewal is lost at once.
 */
export const makeLeaseKeeper = (options: LeaseKeeperOptions) =>
  Effect.gen(function* () {
    const { store, me } = options
    const every = Math.max(100, Math.floor(store.ttlMs / 3))
    const validFor = Math.floor(store.ttlMs * 0.8)
    const held = new Map<string, HeldLease>()
    const freeRounds = new Map<string, number>()
    let lastRecords: ReadonlyArray<LeaseRecord> = []
    let lastRound = 0
    let lastInstances: ReadonlyArray<string> = []
    const lastSeen = new Map<string, LeaseRecord>()
    const missingSince = new Map<string, number>()
    /**
     * A lease not renewed within the TTL has no live owner, whether the store dropped it yet or not. It
     * has been missing since its last renewal this instance saw (the same on every instance that saw
     * it), or since this instance first found it gone.
     */
    const saw = (records: ReadonlyArray<LeaseRecord>) => {
      const now = Date.now()
      for (const model of options.models) {
        const record = records.find((r) => r.model === model && now - r.renewedAt < store.ttlMs)
        if (record !== undefined) {
          lastSeen.set(model, record)
          missingSince.delete(model)
        } else if (!missingSince.has(model)) missingSince.set(model, lastSeen.get(model)?.renewedAt ?? now)
      }
    }

    const hold = (record: LeaseRecord, sentAt: number): HeldLease => {
      const lease: HeldLease = {
        model: record.model,
        owner: me,
        record,
        validUntil: sentAt + validFor,
        get revision() {
          return lease.record.revision
        },
        valid: () => Date.now() < lease.validUntil,
        validThrough: () => lease.validUntil,
      }
      return lease
    }

    const lose = (model: string, why: string) =>
      Effect.gen(function* () {
        if (!held.delete(model)) return
        yield* Effect.logWarning(`lease of ${model} lost: ${why}`)
        yield* options.stop(model, false)
      })

    const renewAll = Effect.suspend(() => Effect.forEach(
      [...held.values()],
      (lease) =>
        Effect.gen(function* () {
          const sentAt = Date.now()
          const state = options.stateOf?.(lease.model)
          const record = state === undefined ? lease.record : { ...lease.record, state }
          const revision = yield* store.renew(record).pipe(Effect.either)
          if (revision._tag === "Left") {
            if (!lease.valid()) yield* lose(lease.model, `not renewed in time (${revision.left.message})`)
            return
          }
          if (revision.right === undefined) return yield* lose(lease.model, "another instance holds it")
          lease.record = { ...record, revision: revision.right, renewedAt: sentAt }
          lease.validUntil = sentAt + validFor
        }),
      { discard: true },
    ))

    /** An instance that runs no models only reads the leases, and is not in the list the models are spread over. */
    const look = Effect.gen(function* () {
      lastRecords = yield* store.leases(options.models)
      lastRound = Date.now()
      saw(lastRecords)
    })

    const round = Effect.gen(function* () {
      yield* renewAll
      // The instances have a bucket of their own, whose stream may be electing a leader while the leases' is not.
      yield* store.announce(me).pipe(Effect.catchAll((e) => Effect.logWarning(`lease round: cannot say this instance is alive (${e.message})`)))
      const records = yield* store.leases(options.models)
      // The list of instances only spreads the models; a stale one for a round still lets a free lease be taken.
      const instances = yield* store.instances.pipe(
        Effect.tap((now) => Effect.sync(() => (lastInstances = now))),
        Effect.catchAll((e) => Effect.as(Effect.logWarning(`lease round: the list of instances is unavailable (${e.message}); using the last one`), lastInstances)),
      )
      lastRecords = records
      lastRound = Date.now()
      saw(records)
      const holders = new Map(records.map((r) => [r.model, r.owner]))
      for (const model of options.models) freeRounds.set(model, holders.has(model) ? 0 : (freeRounds.get(model) ?? 0) + 1)
      // A lease the store shows as ours but we do not hold (we gave it up when it was not renewed in
      // time, and it has not lapsed yet): renewing it takes it back.
      for (const record of records) {
        if (record.owner !== me || held.has(record.model) || !options.models.includes(record.model)) continue
        const sentAt = Date.now()
        const revision = yield* store.renew(record)
        if (revision === undefined) continue
        const lease = hold({ ...record, revision, renewedAt: sentAt }, sentAt)
        held.set(record.model, lease)
        yield* Effect.logInfo(`lease of ${record.model} taken back at revision ${revision}`)
        yield* options.start(lease)
      }
      const plan = leasePlan({ me, models: options.models, instances, holders, freeRounds })
      for (const model of plan.acquire) {
        const sentAt = Date.now()
        const since = Date.now()
        const revision = yield* store.acquire(model, me, since)
        if (revision === undefined) continue
        const lease = hold({ model, owner: me, since, renewedAt: sentAt, revision }, sentAt)
        held.set(model, lease)
        freeRounds.set(model, 0)
        yield* Effect.logInfo(`lease of ${model} taken at revision ${revision}`)
        yield* options.start(lease)
      }
      for (const model of plan.handOver) {
        const lease = held.get(model)
        if (lease === undefined || handing.has(model)) continue
        yield* Effect.logInfo(`lease of ${model} handed over: it belongs to another instance now`)
        // In the background: the rounds go on renewing every lease, this one too until it is released.
        yield* Effect.forkDaemon(handOver(lease))
      }
    })

    /** Models being handed over: their running rows finish before the lease is released. */
    const handing = new Set<string>()
    const handOver = (lease: HeldLease) =>
      Effect.gen(function* () {
        handing.add(lease.model)
        yield* options.stop(lease.model, true)
        held.delete(lease.model)
        yield* store.release(lease.record).pipe(Effect.ignore)
      }).pipe(Effect.ensuring(Effect.sync(() => handing.delete(lease.model))))

    const run = (options.runsModels ? round : look).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("lease round failed; trying again", cause)),
      Effect.repeat(Schedule.spaced(`${every} millis`)),
    )

    /**
     * Stopping: every lease is handed over (running rows finish first), and this instance leaves the list.
     * The rounds have stopped, so the leases are renewed here while their rows drain: a drain longer than
     * the TTL would otherwise let another instance take the model and run the running rows again.
     */
    const release = Effect.gen(function* () {
      const renewing = yield* renewAll.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("lease renewal while stopping failed; trying again", cause)),
        Effect.repeat(Schedule.spaced(`${every} millis`)),
        Effect.withClock(Clock.make()),
        // Stopping runs in a finalizer, which nothing interrupts: the renewals must be, once the leases are handed over.
        Effect.interruptible,
        Effect.fork,
      )
      yield* Effect.forEach([...held.values()], handOver, { discard: true, concurrency: "unbounded" })
      yield* Fiber.interrupt(renewing)
      yield* store.withdraw(me).pipe(Effect.ignore)
    })

    const info = (): ReadonlyArray<LeaseInfo> =>
      lastRecords.map((record) => {
        const mine = held.get(record.model)
        const current = mine?.record ?? record
        return { ...current, nextRenewalAt: mine === undefined ? undefined : Math.max(lastRound, current.renewedAt) + every }
      })

    /** What this instance's rounds know of the model's owner; what it publishes, for a model it holds. */
    const ownership = (model: string): Ownership => {
      const mine = held.get(model)
      if (mine !== undefined) return { _tag: "Owned", state: mine.record.state ?? {} }
      const missing = missingSince.get(model)
      if (missing !== undefined) return { _tag: "Unowned", missingSince: missing }
      return { _tag: "Owned", state: lastSeen.get(model)?.state ?? {} }
    }

    return { run, release, info, lose, ownership, held: held as ReadonlyMap<string, HeldLease> }
  })
