import { Effect, Schedule } from "effect"
import type { Counter } from "prom-client"
import { Dispatcher } from "../actors/Dispatcher.js"
import { Metrics, type ModelSnapshot } from "../metrics/Metrics.js"

export const SAMPLE_MS = 10_000
/** An hour of samples. */
export const SAMPLES_KEPT = 360
const LOOKS_PER_SAMPLE = 10

export interface ModelSample {
  /** Unix ms at the end of the sample's span. */
  readonly at: number
  /** Rows started in the span, retries included. */
  readonly starts: number
  readonly starts_per_second: number
  /** The mean of the looks taken during the span. */
  readonly slots_in_use: number
  readonly slots_limit: number
}

interface Span {
  looks: number
  inUse: number
  limit: number
}

/**
 * Per-model samples of the last hour: starts per second (from the starts counter's growth over the
 * span) and the slots in use and their limit (each looked at LOOKS_PER_SAMPLE times over the span and
 * averaged, so a burst between two samples still shows).
 */
export const historyRing = (kept = SAMPLES_KEPT) => {
  const samples = new Map<string, Array<ModelSample>>()
  const spans = new Map<string, Span>()
  let before: { readonly at: number; readonly starts: ReadonlyMap<string, number> } | undefined

  const look = (models: ReadonlyArray<ModelSnapshot>) => {
    for (const m of models) {
      const span = spans.get(m.model) ?? { looks: 0, inUse: 0, limit: 0 }
      span.looks += 1
      span.inUse += m.slotsInUse
      span.limit += m.slotsLimit
      spans.set(m.model, span)
    }
  }

  /** Closes the span ending at `at`, given every model's starts so far; the first call only sets the baseline. */
  const close = (at: number, startsSoFar: ReadonlyMap<string, number>) => {
    const previous = before
    before = { at, starts: startsSoFar }
    if (previous !== undefined && at > previous.at) {
      const spanMs = at - previous.at
      for (const [model, span] of spans) {
        const ring = samples.get(model) ?? []
        const starts = (startsSoFar.get(model) ?? 0) - (previous.starts.get(model) ?? 0)
        ring.push({
          at,
          starts,
          starts_per_second: Math.round((starts * 100_000) / spanMs) / 100,
          slots_in_use: Math.round((span.inUse / span.looks) * 100) / 100,
          slots_limit: Math.round((span.limit / span.looks) * 100) / 100,
        })
        if (ring.length > kept) ring.splice(0, ring.length - kept)
        samples.set(model, ring)
      }
    }
    spans.clear()
  }

  const read = () => [...samples].map(([model, ring]) => ({ model, samples: [...ring] })).sort((a, b) => a.model.localeCompare(b.model))

  return { look, close, read }
}

const startsByModel = async (counter: Counter | undefined) => {
  const byModel = new Map<string, number>()
  for (const { labels, value } of counter === undefined ? [] : (await counter.get()).values) {
    const model = String(labels["model"])
    byModel.set(model, (byModel.get(model) ?? 0) + value)
  }
  return byModel
}

/** The models' last hour at this instance, sampled on the wall clock for the admin view. */
export class ModelHistory extends Effect.Service<ModelHistory>()("Metrics/ModelHistory", {
  scoped: Effect.gen(function* () {
    const dispatcher = yield* Dispatcher
    const metrics = yield* Metrics
    const counter = metrics.registry.getSingleMetric("sluice_rows_started_total") as Counter | undefined
    const ring = historyRing()
    let looks = 0
    const tick = Effect.gen(function* () {
      ring.look(dispatcher.models())
      looks += 1
      if (looks % LOOKS_PER_SAMPLE !== 0) return
      const starts = yield* Effect.promise(() => startsByModel(counter))
      ring.close(Date.now(), starts)
    })
    yield* Effect.promise(() => startsByModel(counter)).pipe(Effect.map((starts) => ring.close(Date.now(), starts)))
    yield* Effect.forkScoped(Effect.repeat(tick, Schedule.fixed(SAMPLE_MS / LOOKS_PER_SAMPLE)))
    return { read: ring.read, sampleMs: SAMPLE_MS } as const
  }),
}) {}
