import { Context, Effect, Layer } from "effect"
import type { Ending } from "../../domain/batch/fate.js"
import type { LogUnavailable } from "../../eventlog/EventLog.js"

/**
 * Where a batch's fate is claimed: the first event that says how it ends (domain/batch/fate.ts), once
 * for the whole deployment. On NATS the instances decide a batch's events each on its own view of the
 * log, and the log guards each event type's subject alone: one instance could close a batch while
 * another, not yet knowing, completes it. A writer claims its ending before appending it, and one
 * that finds another's ends the batch that way instead.
 */
export interface FateStoreShape {
  /** The batch's ending: `ending` if none was claimed before, else the one that was. */
  readonly claim: (batchId: string, ending: Ending) => Effect.Effect<Ending, LogUnavailable>
  /** The batch is gone from the log: its claim goes too. */
  readonly forget: (batchId: string) => Effect.Effect<void, LogUnavailable>
}

export class FateStore extends Context.Tag("Actors/FateStore")<FateStore, FateStoreShape>() {}

/**
 * The embedded log serves one instance, whose one writer decides a batch's events one at a time on one
 * view of it: no other ending can be on its way, so every claim is granted, and nothing is kept.
 */
export const single = Layer.succeed(
  FateStore,
  FateStore.of({ claim: (_batchId, ending) => Effect.succeed(ending), forget: () => Effect.void }),
)
