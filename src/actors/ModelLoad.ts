import { Context, Layer } from "effect"
import type { ModelEntry } from "../config/Catalog.js"

/**
 * How many batch rows a model may run right now: its `batch_concurrency`, fewer while interactive
 * requests are in flight on it or while its upstream pushes back.
 */
export interface ModelLoadShape {
  readonly batchSlots: (model: ModelEntry) => number
  /** The outcome of one batch attempt, so pushback (429/503) can shrink the model's slots. */
  readonly observe: (model: ModelEntry, status: number | undefined) => void
  /** Calls `listener` whenever a model's batch slots may have grown. */
  readonly onChange: (listener: () => void) => void
}

export class ModelLoad extends Context.Tag("Actors/ModelLoad")<ModelLoad, ModelLoadShape>() {
  /** The catalog's fixed slots, whatever the load. */
  static readonly fixed = Layer.succeed(ModelLoad, {
    batchSlots: (model) => model.batchConcurrency,
    observe: () => undefined,
    onChange: () => undefined,
  })
}
