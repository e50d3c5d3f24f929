import { Effect, Layer } from "effect"
import { EventLog } from "../../eventlog/EventLog.js"
import { type LeaseRecord, LeaseStore } from "./LeaseStore.js"

/**
 * The embedded log serves one instance, which holds every lease. Its revisions start past the log's
 * last sequence, so that they grow across restarts as the KV's do (every claim is appended to the log).
 */
export const layer = (ttlMs: number) =>
  Layer.effect(
    LeaseStore,
    Effect.gen(function* () {
      const log = yield* EventLog
      const held = new Map<string, LeaseRecord>()
      let next = (yield* log.lastSeq) + 1
      const me = new Set<string>()
      return LeaseStore.of({
        ttlMs,
        acquire: (model, owner, since) =>
          Effect.sync(() => {
            const known = held.get(model)
            if (known !== undefined && known.owner !== owner) return undefined
            const revision = next++
            held.set(model, { model, owner, since, renewedAt: Date.now(), revision })
            return revision
          }),
        renew: (lease) =>
          Effect.sync(() => {
            const known = held.get(lease.model)
            if (known?.revision !== lease.revision) return undefined
            held.set(lease.model, { ...known, renewedAt: Date.now(), ...(lease.state === undefined ? {} : { state: lease.state }) })
            return known.revision
          }),
        release: (lease) =>
          Effect.sync(() => {
            if (held.get(lease.model)?.revision === lease.revision) held.delete(lease.model)
          }),
        leases: (models) => Effect.sync(() => [...held.values()].filter((lease) => models.includes(lease.model))),
        announce: (instance) => Effect.sync(() => void me.add(instance)),
        withdraw: (instance) => Effect.sync(() => void me.delete(instance)),
        instances: Effect.sync(() => [...me]),
      })
    }),
  )
