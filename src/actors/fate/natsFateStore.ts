import { jetstream } from "@nats-io/jetstream"
import { Kvm } from "@nats-io/kv"
import { Effect, Layer } from "effect"
import type { Ending } from "../../domain/batch/fate.js"
import { LogUnavailable } from "../../eventlog/EventLog.js"
import { retriedAtStart, scopedNatsConnection } from "../../eventlog/natsConnection.js"
import { FateStore } from "./FateStore.js"

export interface NatsFateStoreOptions {
  readonly url: string
  readonly replicas?: number
}

const FATES = "sluice-fates"
// A claim is made once or twice a batch, at its end: a short timeout lets a writer whose claim the
// bucket does not answer (a node restarting) fail it as an unavailable log and try again.
const TIMEOUT_MS = 2_000

const unavailable = (what: string) => (cause: unknown) =>
  new LogUnavailable({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })

const isConflict = (e: unknown) => e instanceof Error && /wrong last sequence|key exists/i.test(e.message)

/**
 * Fates in a JetStream KV bucket, a key a batch: `create` stores the first claim and refuses the others
 * (nats-server 2.9 has no guard across the log's subjects, which would let the log do it), and a refused
 * claimant reads the one that stands. No TTL: a claim stays until its batch is purged.
 */
export const layer = (options: NatsFateStoreOptions) =>
  Layer.scoped(
    FateStore,
    Effect.gen(function* () {
      const nc = yield* scopedNatsConnection(options.url, "fates")
      const fates = yield* retriedAtStart(
        Effect.tryPromise({
          try: async () => {
            await new Kvm(nc).create(FATES, { history: 1, replicas: options.replicas ?? 1 })
            return await new Kvm(jetstream(nc, { timeout: TIMEOUT_MS })).open(FATES)
          },
          catch: unavailable(`cannot open the KV bucket ${FATES}`),
        }),
      )
      const standing = (batchId: string) =>
        Effect.tryPromise({
          try: async () => {
            const entry = await fates.get(batchId)
            return entry?.operation === "PUT" ? entry.json<Ending>() : undefined
          },
          catch: unavailable(`cannot read the fate of ${batchId}`),
        })
      const claim = (batchId: string, ending: Ending): Effect.Effect<Ending, LogUnavailable> =>
        Effect.tryPromise({
          try: () => fates.create(batchId, JSON.stringify(ending)),
          catch: (e) => (isConflict(e) ? ("taken" as const) : unavailable(`cannot claim the fate of ${batchId}`)(e)),
        }).pipe(
          Effect.as(ending),
          Effect.catchIf(
            (e): e is "taken" => e === "taken",
            // Taken: the standing claim, or (purged meanwhile, which only a deleted batch's is) ours after all.
            () => Effect.flatMap(standing(batchId), (stood) => (stood === undefined ? claim(batchId, ending) : Effect.succeed(stood))),
          ),
        )
      return FateStore.of({
        claim,
        forget: (batchId) => Effect.tryPromise({ try: () => fates.purge(batchId), catch: unavailable(`cannot forget the fate of ${batchId}`) }),
      })
    }),
  )
