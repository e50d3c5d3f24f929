import { Context, Effect, Exit, Layer, Scope } from "effect"
import fc from "fast-check"
import { decide } from "../../src/domain/batch/decide.js"
import type { BatchEvent } from "../../src/domain/batch/events.js"
import { evolve, initialState } from "../../src/domain/batch/state.js"
import { batchSubject } from "../../src/domain/batch/subjects.js"
import type { LogMessage } from "../../src/eventlog/EventLog.js"
import { ReadModel } from "../../src/projections/ReadModel.js"
import { anyEvent, batchCreated, batchId, commandFor, createdAt, scenario } from "../domain/arbitraries/batchCommands.js"

/** `use` on a new in-memory read model, closed after it. */
export const withReadModel = <A>(use: (db: ReadModel["Type"]) => A): A => {
  const scope = Effect.runSync(Scope.make())
  try {
    return use(Context.get(Effect.runSync(Layer.buildWithScope(ReadModel.layer(":memory:"), scope)), ReadModel))
  } finally {
    Effect.runSync(Scope.close(scope, Exit.void))
  }
}

/** The log the decider writes for a scenario, with extra events slipped in where the picks say. */
export const messyLog = (total: number, steps: ReadonlyArray<Parameters<typeof commandFor>[0]>, extra: ReadonlyArray<readonly [number, BatchEvent]>) => {
  const created = batchCreated(total)
  let state = evolve(initialState(batchId), created)
  let at = createdAt
  const log: Array<BatchEvent> = []
  for (const step of steps) {
    at += step.dt
    const decision = decide(commandFor(step, state, at), state)
    if (decision._tag === "Right") {
      log.push(...decision.right)
      state = decision.right.reduce(evolve, state)
    }
  }
  for (const [pick, event] of extra) log.splice(pick % (log.length + 1), 0, event)
  const rows = Array.from({ length: total }, (_, i) => ({ custom_id: `r${i}`, model: "glm-5.3-flash", body: {} }))
  return [{ type: "rows_added", batch_id: batchId, first: 0, rows } as BatchEvent, created, ...log]
}

/** A decider's scenario, events to slip into its log, and the sizes of the windows it is applied in. */
export const messyScenario = scenario.chain((s) =>
  fc.tuple(
    fc.constant(s),
    fc.array(fc.tuple(fc.nat(), anyEvent(s.total)), { maxLength: 30 }),
    fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 20 }),
  ),
)

const encoder = new TextEncoder()

/** `events` as the log's messages from sequence `firstSeq` on, one event a message. */
export const asMessages = (events: ReadonlyArray<BatchEvent>, firstSeq: number): Array<LogMessage> =>
  events.map((event, i) => ({ seq: firstSeq + i, subject: batchSubject(event.batch_id, event.type), data: encoder.encode(JSON.stringify(event)), time: createdAt }))
