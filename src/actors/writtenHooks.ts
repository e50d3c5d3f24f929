import { Effect } from "effect"
import { type BatchEvent, onceOnlyTypes } from "../domain/batch/events.js"
import type { BatchState } from "../domain/batch/state.js"
import type { MetricsShape, SettledOutcome } from "../metrics/Metrics.js"
import type { BatchOwner } from "./batchState.js"

/** A batch lifecycle event's log line, with the batch, its account and its models. */
export const logLifecycle = (event: BatchEvent, owner: BatchOwner | undefined) =>
  Effect.logInfo(`batch ${event.batch_id} ${event.type.slice("batch_".length)}`).pipe(
    Effect.annotateLogs({
      batch_id: event.batch_id,
      account: owner?.accountId ?? "",
      models: owner?.models.join(",") ?? "",
      event: event.type,
    }),
  )

/** The rows that a closing event settles together: those neither running nor finished before it, by model. */
const idleByModel = (rowModels: ReadonlyArray<string>, before: BatchState, owner: BatchOwner | undefined, rows: number) => {
  if (owner !== undefined && owner.models.length === 1) return new Map([[owner.models[0]!, rows]])
  const models = rowModels
  const split = new Map<string, number>()
  for (let idx = 0; idx < before.total; idx++) {
    const phase = before.rows.get(idx)
    if (phase !== undefined && phase.status !== "queued") continue
    const model = models[idx] ?? "unknown"
    split.set(model, (split.get(model) ?? 0) + 1)
  }
  return split
}

const bulkOutcome = (event: BatchEvent): readonly [SettledOutcome, string, number] | undefined => {
  switch (event.type) {
    case "batch_cancelling":
      return ["cancelled", "", event.cancelled_rows]
    case "batch_failing":
    case "batch_failed":
      return ["failed", "batch_failed", event.failed_rows]
    case "batch_expiring":
    case "batch_expired":
      return ["expired", "", event.expired_rows]
    default:
      return undefined
  }
}

/**
 * What a decision's events do once the log holds them: a log line per lifecycle event, and the rows a
 * closing event settled counted by model. Worked out from the state before the events, when decided.
 */
export const afterWritten = (
  rowModels: ReadonlyArray<string>,
  metrics: MetricsShape,
  before: BatchState,
  owner: BatchOwner | undefined,
  events: ReadonlyArray<BatchEvent>,
): Effect.Effect<void> | undefined => {
  // A row's decisions, nearly all of them, have no lifecycle event: nothing to build for them.
  if (!events.some((event) => onceOnlyTypes.has(event.type))) return undefined
  const steps: Array<Effect.Effect<void>> = []
  for (const event of events) {
    // The lifecycle events are the once-only ones.
    if (!onceOnlyTypes.has(event.type)) continue
    steps.push(logLifecycle(event, owner))
    const bulk = bulkOutcome(event)
    if (bulk === undefined || bulk[2] === 0) continue
    const [outcome, code, rows] = bulk
    const split = idleByModel(rowModels, before, owner, rows)
    steps.push(Effect.sync(() => split.forEach((n, model) => metrics.rowSettled(model, outcome, code, n))))
  }
  return steps.length === 0 ? undefined : Effect.all(steps, { discard: true })
}
