import { Effect } from "effect"
import { Dispatcher } from "../actors/Dispatcher.js"
import { InstanceId } from "../metrics/Metrics.js"
import { ModelHistory } from "./modelHistory.js"

/** What this instance knows of each model: the leases it sees, and the live state of the models it runs. */
export class ModelStates extends Effect.Service<ModelStates>()("Http/ModelStates", {
  effect: Effect.gen(function* () {
    const dispatcher = yield* Dispatcher
    const instance = yield* InstanceId
    const recorded = yield* ModelHistory

    const leases = Effect.sync(() => ({
      object: "list" as const,
      instance,
      data: dispatcher.leases().map((l) => ({
        model: l.model,
        owner: l.owner,
        since: l.since,
        renewed_at: l.renewedAt,
        next_renewal_at: l.nextRenewalAt ?? null,
        revision: l.revision,
      })),
    }))

    const models = Effect.sync(() => ({
      object: "list" as const,
      instance,
      data: dispatcher.models().map((m) => {
        let queued = 0
        for (const n of m.queuedByAccount.values()) queued += n
        return {
          id: m.model,
          batch_concurrency: m.batchConcurrency,
          concurrency: m.concurrency,
          pushback: m.batchConcurrency - m.concurrency,
          slots_limit: m.slotsLimit,
          slots_in_use: m.slotsInUse,
          running: m.running,
          queued,
          queued_by_account: Object.fromEntries(m.queuedByAccount),
          queued_by_priority: Object.fromEntries(m.queuedByPriority),
          interactive_in_flight: m.interactiveInFlight,
          lease_owner: m.leaseOwner,
        }
      }),
    }))

    const history = Effect.sync(() => ({ object: "list" as const, instance, sample_ms: recorded.sampleMs, data: recorded.read() }))

    return { leases, models, history } as const
  }),
  dependencies: [ModelHistory.Default],
}) {}
