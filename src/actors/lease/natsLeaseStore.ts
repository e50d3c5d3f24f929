import { Kvm, type KV } from "@nats-io/kv"
import { connect } from "@nats-io/transport-node"
import { Data, Effect, Layer } from "effect"
import { laneToken } from "../../domain/batch/subjects.js"
import { LogUnavailable } from "../../eventlog/EventLog.js"
import { type LeaseRecord, LeaseStore } from "./LeaseStore.js"

export interface NatsLeaseStoreOptions {
  readonly url: string
  readonly ttlMs: number
  readonly replicas?: number
}

const LEASES = "sluice-leases"
const INSTANCES = "sluice-instances"

/**
 * The lease bucket was made by an instance with another SLUICE_LEASE_TTL_MS. Opening it keeps its TTL
 * silently, and an owner that believes its lease lasts longer than the bucket keeps it would go on
 * running a model another instance has taken: every instance must use the bucket's TTL.
 */
export class LeaseTtlMismatch extends Data.TaggedError("LeaseTtlMismatch")<{
  readonly bucket: string
  readonly bucketTtlMs: number
  readonly ttlMs: number
}> {
  override get message() {
    return `the lease bucket ${this.bucket} keeps leases for ${this.bucketTtlMs} ms, but this instance's SLUICE_LEASE_TTL_MS is ${this.ttlMs}`
  }
}

const unavailable = (what: string) => (cause: unknown) =>
  new LogUnavailable({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })

/** Refusals of a create or an update on a revision that is not the key's: another holds it. */
const isConflict = (e: unknown) => e instanceof Error && /wrong last sequence|key exists/i.test(e.message)

interface Stored {
  readonly model: string
  readonly owner: string
  readonly since: number
}

/**
 * Leases in a JetStream KV bucket. nats-server 2.9 has no per-key TTL: the bucket's TTL (its streams'
 * max age) drops a lease its owner stopped renewing, so owners renew well inside it. A lease is taken
 * with `create` (refused while a value stands), renewed with `update` on its revision, and given up
 * with `delete` after checking that it is still ours.
 */
export const layer = (options: NatsLeaseStoreOptions) =>
  Layer.scoped(
    LeaseStore,
    Effect.gen(function* () {
      const nc = yield* Effect.acquireRelease(
        Effect.tryPromise({
          try: () => connect({ servers: options.url.split(","), maxReconnectAttempts: -1, reconnectTimeWait: 500, name: "sluice-leases" }),
          catch: unavailable(`cannot connect to ${options.url} for the leases`),
        }),
        (nc) => Effect.promise(() => nc.close().catch(() => undefined)),
      )
      const kvm = new Kvm(nc)
      const bucket = (name: string) =>
        Effect.tryPromise({
          try: () => kvm.create(name, { ttl: options.ttlMs, history: 1, replicas: options.replicas ?? 1 }),
          catch: unavailable(`cannot open the KV bucket ${name}`),
        })
      const leases: KV = yield* bucket(LEASES)
      const instances: KV = yield* bucket(INSTANCES)
      for (const [name, kv] of [[LEASES, leases], [INSTANCES, instances]] as const) {
        const { ttl } = yield* Effect.tryPromise({ try: () => kv.status(), catch: unavailable(`cannot read the KV bucket ${name}`) })
        if (ttl !== options.ttlMs) return yield* Effect.fail(new LeaseTtlMismatch({ bucket: name, bucketTtlMs: ttl, ttlMs: options.ttlMs }))
      }
      const keyOf = (model: string) => laneToken(model)
      const encode = (value: Stored) => JSON.stringify(value)
      const call = <A>(what: string, f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: unavailable(what) })
      const conflictIsUndefined = <A>(what: string, f: () => Promise<A>) =>
        Effect.tryPromise({ try: f, catch: (e) => (isConflict(e) ? "conflict" as const : unavailable(what)(e)) }).pipe(
          Effect.catchIf((e): e is "conflict" => e === "conflict", () => Effect.succeed(undefined)),
        )

      const list = (kv: KV) =>
        call("cannot list the leases", async () => {
          const entries = []
          for await (const key of await kv.keys()) {
            const entry = await kv.get(key)
            if (entry !== null && entry.operation === "PUT") entries.push(entry)
          }
          return entries
        })

      return LeaseStore.of({
        ttlMs: options.ttlMs,
        acquire: (model, owner, since) =>
          conflictIsUndefined(`cannot take the lease of ${model}`, () => leases.create(keyOf(model), encode({ model, owner, since }))),
        renew: (lease) =>
          conflictIsUndefined(`cannot renew the lease of ${lease.model}`, () =>
            leases.update(keyOf(lease.model), encode({ model: lease.model, owner: lease.owner, since: lease.since }), lease.revision),
          ),
        release: (lease) =>
          call(`cannot give up the lease of ${lease.model}`, async () => {
            const entry = await leases.get(keyOf(lease.model))
            if (entry?.operation === "PUT" && entry.json<Stored>().owner === lease.owner) {
              await leases.delete(keyOf(lease.model), { previousSeq: entry.revision })
            }
          }).pipe(Effect.catchIf((e) => isConflict(e.cause), () => Effect.void)),
        leases: Effect.map(list(leases), (entries) =>
          entries.map((entry): LeaseRecord => {
            const stored = entry.json<Stored>()
            return { ...stored, renewedAt: entry.created.getTime(), revision: entry.revision }
          }),
        ),
        announce: (instance) => call("cannot announce this instance", () => instances.put(keyOf(instance), instance)).pipe(Effect.asVoid),
        withdraw: (instance) => call("cannot withdraw this instance", () => instances.delete(keyOf(instance))),
        instances: Effect.map(list(instances), (entries) => entries.map((entry) => entry.string())),
      })
    }),
  )
