import { Clock, Context, Effect, FiberSet, Layer } from "effect"
import type { ModelEntry } from "../config/Catalog.js"
import {
  type Pushback,
  RECOVERY_STEP_MS,
  batchSlots,
  concurrencyAt,
  noPushback,
  onPushback,
  queuePushesBack,
} from "../domain/scheduling/batchSlots.js"
import { waitingRequests } from "../domain/upstream/waitingRequests.js"
import { LoadSharing } from "./LoadSharing.js"

/**
 * How many batch rows a model may run right now: its `batch_concurrency`, fewer while interactive
 * requests are in flight on it or while its upstream pushes back.
 */
export interface ModelLoadShape {
  readonly batchSlots: (model: ModelEntry) => number
  /** The model's concurrency after pushback, before interactive requests take their slots. */
  readonly concurrency: (model: ModelEntry) => number
  /** The model's interactive requests in flight on this instance. */
  readonly interactiveInFlight: (model: ModelEntry) => number
  /** The outcome of one batch attempt, so pushback (429/503) can shrink the model's slots; with the Retry-After it sent. */
  readonly observe: (model: ModelEntry, status: number | undefined, retryAfterMs?: number) => void
  /** The Retry-After of the model's last 429/503, while its slots are cut back; undefined when it sent none. */
  readonly retryAfterMs: (model: ModelEntry) => number | undefined
  /** The model's interactive requests in flight on every instance, as far as this one knows. */
  readonly interactiveEverywhere: (model: ModelEntry) => number
  /** Calls `listener` whenever a model's batch slots may have grown. */
  readonly onChange: (listener: () => void) => void
  /** Calls `listener` whenever a model's batch slots may have shrunk. */
  readonly onFewer: (listener: () => void) => void
}

/** The interactive side of a model's load: each request counts from `begin` until the release it answers. */
export interface InteractiveLoadShape {
  /** An interactive request starts on `model`; the answer ends it (idempotent). */
  readonly begin: (model: ModelEntry) => () => void
}

export class InteractiveLoad extends Context.Tag("Actors/InteractiveLoad")<InteractiveLoad, InteractiveLoadShape>() {}

interface Lane {
  readonly model: ModelEntry
  interactive: number
  pushback: Pushback
  retryAfterMs: number | undefined
}

const METRICS_EVERY_MS = 5_000
const METRICS_TIMEOUT_MS = 2_000
/** An upstream that could not be reached is asked again this much later; one without the endpoint or the gauge, much later. */
const METRICS_UNREACHABLE_PAUSE_MS = 60_000
const METRICS_ABSENT_PAUSE_MS = 600_000

const metricsUrl = (model: ModelEntry) => `${model.upstreamUrl.replace(/\/v1$/, "")}/metrics`

const readMetrics = (url: string, apiKey: string | undefined) =>
  Effect.tryPromise(async (signal) => {
    const response = await fetch(url, {
      signal: AbortSignal.any([signal, AbortSignal.timeout(METRICS_TIMEOUT_MS)]),
      headers: apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` },
    })
    if (response.ok) return response.text()
    await response.body?.cancel()
    return ""
  })

const live = Layer.scopedContext(
  Effect.gen(function* () {
    // The actors' clock: pushback and recovery follow the time rows are scheduled by.
    const clock = yield* Effect.clock
    const run = yield* FiberSet.makeRuntime<never>()
    // The model's owner gives way to the interactive requests of every instance.
    const sharing = yield* LoadSharing
    const lanes = new Map<string, Lane>()
    const listeners: Array<() => void> = []
    const notify = () => {
      for (const listener of listeners) listener()
    }
    const fewerListeners: Array<() => void> = []
    const notifyFewer = () => {
      for (const listener of fewerListeners) listener()
    }
    const lane = (model: ModelEntry) => {
      let found = lanes.get(model.id)
      if (found === undefined) lanes.set(model.id, (found = { model, interactive: 0, pushback: noPushback(model.batchConcurrency), retryAfterMs: undefined }))
      return found
    }
    const concurrency = (l: Lane) => concurrencyAt(l.pushback, l.model.batchConcurrency, clock.unsafeCurrentTimeMillis())
    const slots = (l: Lane) => batchSlots(concurrency(l), l.interactive + sharing.interactiveElsewhere(l.model.id))
    sharing.onReports((models) => {
      if (![...models].some((id) => lanes.has(id))) return
      notifyFewer()
      notify()
    })

    // Slots come back with time alone, so someone must tell the waiting workers: a tick runs while any model recovers.
    let recovering = false
    const recover = Effect.gen(function* () {
      for (;;) {
        yield* Effect.sleep(RECOVERY_STEP_MS)
        notify()
        if ([...lanes.values()].every((l) => concurrency(l) >= l.model.batchConcurrency)) {
          recovering = false
          return
        }
      }
    })
    const pushback = (l: Lane, retryAfterMs?: number) => {
      l.pushback = onPushback(l.pushback, l.model.batchConcurrency, clock.unsafeCurrentTimeMillis())
      l.retryAfterMs = retryAfterMs
      notifyFewer()
      if (!recovering) {
        recovering = true
        run(recover)
      }
    }

    // Wall-clock polling: reading an upstream's gauge is I/O, not a scheduling rule, and must not wait on a test's clock.
    const pausedUntil = new Map<string, number>()
    const poll = (url: string, models: ReadonlyArray<Lane>) =>
      readMetrics(url, models[0]?.model.apiKey).pipe(
        Effect.map((text) => {
          let seen = false
          for (const l of models) {
            const waiting = waitingRequests(text, l.model.upstreamModel)
            if (waiting === undefined) continue
            seen = true
            if (queuePushesBack(waiting, l.model.batchConcurrency)) pushback(l)
          }
          if (!seen) pausedUntil.set(url, Date.now() + METRICS_ABSENT_PAUSE_MS)
        }),
        Effect.catchAll(() => Effect.sync(() => pausedUntil.set(url, Date.now() + METRICS_UNREACHABLE_PAUSE_MS))),
      )
    const pollAll = Effect.suspend(() => {
      const byUrl = new Map<string, Array<Lane>>()
      for (const l of lanes.values()) {
        const url = metricsUrl(l.model)
        if ((pausedUntil.get(url) ?? 0) > Date.now()) continue
        byUrl.set(url, [...(byUrl.get(url) ?? []), l])
      }
      return Effect.forEach(byUrl, ([url, models]) => poll(url, models), { concurrency: "unbounded", discard: true })
    })
    yield* Effect.sleep(METRICS_EVERY_MS).pipe(
      Effect.zipRight(pollAll),
      Effect.forever,
      Effect.withClock(Clock.make()),
      Effect.forkScoped,
    )

    const load: ModelLoadShape = {
      batchSlots: (model) => slots(lane(model)),
      concurrency: (model) => concurrency(lane(model)),
      interactiveInFlight: (model) => lane(model).interactive,
      observe: (model, status, retryAfterMs) => {
        if (status === 429 || status === 503) pushback(lane(model), retryAfterMs)
      },
      retryAfterMs: (model) => {
        const l = lane(model)
        return concurrency(l) < model.batchConcurrency ? l.retryAfterMs : undefined
      },
      interactiveEverywhere: (model) => lane(model).interactive + sharing.interactiveElsewhere(model.id),
      onChange: (listener) => void listeners.push(listener),
      onFewer: (listener) => void fewerListeners.push(listener),
    }
    const interactive: InteractiveLoadShape = {
      begin: (model) => {
        const l = lane(model)
        const before = slots(l)
        l.interactive++
        sharing.setInteractive(model.id, l.interactive)
        if (slots(l) < before) notifyFewer()
        let ended = false
        return () => {
          if (ended) return
          ended = true
          const before = slots(l)
          l.interactive--
          sharing.setInteractive(model.id, l.interactive)
          // Every model's workers listen: only a change that frees a batch slot wakes them, or the last
          // interactive request's end, which frees none on a one-slot model but lets background rows run.
          if (slots(l) > before || l.interactive === 0) notify()
        }
      },
    }
    return Context.make(ModelLoad, load).pipe(Context.add(InteractiveLoad, interactive))
  }),
)

export class ModelLoad extends Context.Tag("Actors/ModelLoad")<ModelLoad, ModelLoadShape>() {
  /** The catalog's fixed slots, whatever the load; interactive requests are served but not counted. */
  static readonly fixed = Layer.merge(
    Layer.succeed(ModelLoad, {
      batchSlots: (model) => model.batchConcurrency,
      concurrency: (model) => model.batchConcurrency,
      interactiveInFlight: () => 0,
      observe: () => undefined,
      retryAfterMs: () => undefined,
      interactiveEverywhere: () => 0,
      onChange: () => undefined,
      onFewer: () => undefined,
    }),
    Layer.succeed(InteractiveLoad, { begin: () => () => undefined }),
  )

  /**
   * Slots that give way: each interactive request in flight on a model takes one of its batch slots,
   * and pushback from its upstream (429/503 answers, or a vLLM waiting queue as long as its
   * `batch_concurrency`) halves them, one slot coming back per calm second. Never fewer than one.
   * Interactive requests on the other instances count too, as LoadSharing reports them.
   * Build it on the actors' clock.
   */
  static readonly live = live
}
