import { Context, Effect, Layer, Queue } from "effect"
import type { BatchEvent } from "../domain/batch/events.js"
import { BatchWriter, type Written } from "./BatchWriter.js"

/** A batch was created, finished or deleted; its new state is readable once the projections reach `seq`. */
export interface LifecycleChange {
  readonly batchId: string
  readonly seq: number
}

/** The changes the timers have yet to plan for, kept from the service's start so none is missed. */
export class BatchLifecycle extends Context.Tag("Actors/BatchLifecycle")<BatchLifecycle, Queue.Queue<LifecycleChange>>() {}

export const layer = Layer.effect(BatchLifecycle, Queue.unbounded<LifecycleChange>())

const changesTimers: ReadonlySet<BatchEvent["type"]> = new Set([
  "batch_completed",
  "batch_cancelled",
  "batch_failed",
  "batch_expired",
  "batch_deleted",
])

/** The batch writer, telling the lifecycle queue about every batch it creates, finishes or deletes. */
export const announcing = Layer.effect(
  BatchWriter,
  Effect.gen(function* () {
    const writer = yield* BatchWriter
    const changes = yield* BatchLifecycle
    const announce = (batchId: string, seq: number) => Effect.sync(() => Queue.unsafeOffer(changes, { batchId, seq }))
    const changed = ({ events, finished }: Written) => finished === true || events.some((e) => changesTimers.has(e.type))
    const announceIfChanged = (batchId: string) => (written: Written) => (changed(written) ? announce(batchId, written.seq) : Effect.void)
    return {
      ...writer,
      create: (batch) => Effect.tap(writer.create(batch), ({ batchId, seq }) => announce(batchId, seq)),
      execute: (batchId, command) => Effect.tap(writer.execute(batchId, command), announceIfChanged(batchId)),
      executeRow: (batchId, command, lane) => Effect.tap(writer.executeRow(batchId, command, lane), announceIfChanged(batchId)),
      decideRowNow: (batchId, command, lane) => {
        const decided = writer.decideRowNow(batchId, command, lane)
        if (decided === undefined) return undefined
        return {
          events: decided.events,
          whenStored: (stored) =>
            decided.whenStored((written) => {
              if (written !== undefined && changed(written)) Queue.unsafeOffer(changes, { batchId, seq: written.seq })
              stored(written)
            }),
          written: () => Effect.tap(decided.written(), announceIfChanged(batchId)),
        }
      },
    } satisfies BatchWriter["Type"]
  }),
)
