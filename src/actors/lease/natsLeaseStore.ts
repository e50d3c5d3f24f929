import { jetstream, jetstreamManager } from "@nats-io/jetstream"
import { Kvm, type KV, type KvEntry } from "@nats-io/kv"
import { Data, Effect, Layer } from "effect"
import { laneToken } from "../../domain/batch/subjects.js"
import type { ModelState } from "../../domain/waiting/modelState.js"
import { LogUnavailable } from "../../eventlog/EventLog.js"
import { retriedAtStart, scopedNatsConnection } from "../../eventlog/natsConnection.js"
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
  /** Added with waiting_on: an older instance's record has none, and an older reader ignores it. */
  readonly state?: ModelState
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
      const nc = yield* scopedNatsConnection(options.url, "leases")
      const kvm = new Kvm(nc)
      const bucket = (name: string) =>
        Effect.tryPromise({
          try: () => kvm.create(name, { ttl: options.ttlMs, history: 1, replicas: options.replicas ?? 1 }),
          catch: unavailable(`cannot open the KV bucket ${name}`),
        })
      // Made (in replicas, which takes a while) with JetStream's default timeout; used with a short one,
      // so that a request the store does not answer fails within a round rather than after 5 s, and the
      // next round tries again while the lease is still valid.
      const timeout = Math.max(1_000, Math.floor(options.ttlMs / 3))
      const quick = new Kvm(jetstream(nc, { timeout }))
      const opened = (name: string) =>
        Effect.gen(function* () {
          const status = yield* retriedAtStart(
            Effect.flatMap(bucket(name), (made) =>
              Effect.tryPromise({ try: () => made.status(), catch: unavailable(`cannot read the KV bucket ${name}`) }),
            ),
          )
          if (status.ttl !== options.ttlMs) return yield* Effect.fail(new LeaseTtlMismatch({ bucket: name, bucketTtlMs: status.ttl, ttlMs: options.ttlMs }))
          const allow_direct = status.streamInfo.config.allow_direct
          return yield* retriedAtStart(
            Effect.tryPromise({ try: () => quick.open(name, { allow_direct }), catch: unavailable(`cannot open the KV bucket ${name}`) }),
          )
        })
      const leases: KV = yield* opened(LEASES)
      const instances: KV = yield* opened(INSTANCES)
      const keyOf = (model: string) => laneToken(model)
      const encode = (value: Stored) => JSON.stringify(value)
      const call = <A>(what: string, f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: unavailable(what) })
      const conflictIsUndefined = <A>(what: string, f: () => Promise<A>) =>
        Effect.tryPromise({ try: f, catch: (e) => (isConflict(e) ? "conflict" as const : unavailable(what)(e)) }).pipe(
          Effect.catchIf((e): e is "conflict" => e === "conflict", () => Effect.succeed(undefined)),
        )

      // Read with single requests (a direct get answers from any replica), not with `kv.keys()`: that
      // one waits on a push consumer's deliveries, and one whose stream is changing leader (a NATS node
      // restarting) or whose last message aged out waits for a heartbeat, longer than a lease lasts.
      const present = (entries: ReadonlyArray<KvEntry | null>) => entries.filter((entry): entry is KvEntry => entry?.operation === "PUT")
      const jsm = yield* Effect.tryPromise({ try: () => jetstreamManager(nc, { timeout }), catch: unavailable("JetStream is unavailable for the leases") })
      const listInstances = call("cannot list the instances", async () => {
        const prefix = `$KV.${INSTANCES}.`
        const info = await jsm.streams.info(`KV_${INSTANCES}`, { subjects_filter: `${prefix}>` })
        const keys = Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length))
        return present(await Promise.all(keys.map((key) => instances.get(key))))
      })

      return LeaseStore.of({
        ttlMs: options.ttlMs,
        acquire: (model, owner, since) =>
          conflictIsUndefined(`cannot take the lease of ${model}`, () => leases.create(keyOf(model), encode({ model, owner, since }))),
        renew: (lease) =>
          conflictIsUndefined(`cannot renew the lease of ${lease.model}`, () =>
            leases.update(
              keyOf(lease.model),
              encode({ model: lease.model, owner: lease.owner, since: lease.since, ...(lease.state === undefined ? {} : { state: lease.state }) }),
              lease.revision,
            ),
          ),
        release: (lease) =>
          call(`cannot give up the lease of ${lease.model}`, async () => {
            const entry = await leases.get(keyOf(lease.model))
            if (entry?.operation === "PUT" && entry.json<Stored>().owner === lease.owner) {
              await leases.delete(keyOf(lease.model), { previousSeq: entry.revision })
            }
          }).pipe(Effect.catchIf((e) => isConflict(e.cause), () => Effect.void)),
        leases: (models) =>
          call("cannot read the leases", async () => present(await Promise.all(models.map((model) => leases.get(keyOf(model)))))).pipe(
            Effect.map((entries) => entries.map((entry): LeaseRecord => {
            const stored = entry.json<Stored>()
              return { ...stored, renewedAt: entry.created.getTime(), revision: entry.revision }
            })),
          ),
        announce: (instance) => call("cannot announce this instance", () => instances.put(keyOf(instance), instance)).pipe(Effect.asVoid),
        withdraw: (instance) => call("cannot withdraw this instance", () => instances.delete(keyOf(instance))),
        instances: Effect.map(listInstances, (entries) => entries.map((entry) => entry.string())),
      })
    }),
  )
