import { Context, type Effect } from "effect"
import type { ModelState } from "../../domain/waiting/modelState.js"
import type { LogUnavailable } from "../../eventlog/EventLog.js"

/** A model's lease as the store holds it. `revision` is its fencing token: it only grows. */
export interface LeaseRecord {
  readonly model: string
  readonly owner: string
  /** When the owner first took it (ms). */
  readonly since: number
  /** When it was last written: taken or renewed (ms). */
  readonly renewedAt: number
  readonly revision: number
  /** What the owner last published of the model's load with a renewal: why its queued rows wait. */
  readonly state?: ModelState
}

/**
 * Where the models' leases live: one owner per model, in the whole deployment. On NATS, a JetStream KV
 * bucket whose TTL lets a dead owner's lease lapse; on the embedded log (one instance only), memory.
 * Instances also say they are alive here, so that the models can be spread over the live ones.
 */
export interface LeaseStoreShape {
  readonly ttlMs: number
  /** Takes the model's lease if nobody holds it: its revision, or undefined when another does. */
  readonly acquire: (model: string, owner: string, since: number) => Effect.Effect<number | undefined, LogUnavailable>
  /** Renews a lease held at `revision`, writing its `state`: its new revision, or undefined once it is no longer this one. */
  readonly renew: (lease: LeaseRecord) => Effect.Effect<number | undefined, LogUnavailable>
  /** Gives the lease up, if it is still this one, so that another instance takes it at once. */
  readonly release: (lease: LeaseRecord) => Effect.Effect<void, LogUnavailable>
  /** The leases of these models that someone holds. */
  readonly leases: (models: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<LeaseRecord>, LogUnavailable>
  /** This instance is alive (renewed with the leases) / is stopping. */
  readonly announce: (instance: string) => Effect.Effect<void, LogUnavailable>
  readonly withdraw: (instance: string) => Effect.Effect<void, LogUnavailable>
  readonly instances: Effect.Effect<ReadonlyArray<string>, LogUnavailable>
}

export class LeaseStore extends Context.Tag("Actors/LeaseStore")<LeaseStore, LeaseStoreShape>() {}
