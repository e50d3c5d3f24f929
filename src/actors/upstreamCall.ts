import { Deferred, Duration, Effect, FiberId } from "effect"
import type { ModelEntry } from "../config/Catalog.js"
import type { UpstreamOutcome } from "../domain/upstream/UpstreamOutcome.js"
import { type UpstreamTarget, upstreamThread } from "./upstreamThread.js"

/** The stored body names the public model id; the upstream may know it by another name. */
const upstreamBody = (model: ModelEntry, body: string): string => {
  if (model.upstreamModel === model.id) return body
  const parsed = JSON.parse(body) as Record<string, unknown>
  return JSON.stringify({ ...parsed, model: model.upstreamModel })
}

const targetOf = (model: ModelEntry): UpstreamTarget => {
  const url = new URL(`${model.upstreamUrl}/chat/completions`)
  return {
    https: url.protocol === "https:",
    hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
    ...(url.port === "" ? {} : { port: Number(url.port) }),
    path: `${url.pathname}${url.search}`,
    ...(url.username === "" ? {} : { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` }),
    ...(model.apiKey === undefined ? {} : { apiKey: model.apiKey }),
    maxSockets: Math.max(model.batchConcurrency, 16) * 2,
  }
}

interface InFlight {
  readonly deadline: number
  readonly settle: (outcome: UpstreamOutcome) => void
}

/**
 * The model's upstream calls: one attempt of one row, which never fails (every way it can end is an
 * outcome). Timeouts run on the actors' clock, but not as a race per call (a sleeping fiber raced
 * against each request cost about 90 µs a row): calls are kept in start order, which is deadline
 * order since they share one timeout, and one fiber sleeps until the oldest deadline and aborts
 * whatever has passed it.
 */
export const makeUpstreamCaller = (model: ModelEntry) =>
  Effect.gen(function* () {
    const clock = yield* Effect.clock
    const thread = yield* upstreamThread
    const target = thread.target(targetOf(model))
    const inFlight = new Map<number, InFlight>()
    let idle = Deferred.unsafeMake<void>(FiberId.none)

    const sweep = Effect.gen(function* () {
      while (true) {
        const oldest = inFlight.values().next().value
        if (oldest === undefined) {
          yield* Deferred.await(idle)
          idle = Deferred.unsafeMake<void>(FiberId.none)
          continue
        }
        const now = clock.unsafeCurrentTimeMillis()
        if (oldest.deadline > now) {
          yield* clock.sleep(Duration.millis(oldest.deadline - now))
          continue
        }
        for (const [id, call] of inFlight) {
          if (call.deadline > now) break
          inFlight.delete(id)
          thread.abort(id)
          call.settle({ _tag: "Timeout" })
        }
      }
    })
    yield* Effect.forkScoped(sweep)

    /** `onAnswered` runs as soon as the call ends, before the caller's fiber resumes: a slot can be freed at once. */
    return (body: string, onAnswered?: (outcome: UpstreamOutcome) => void): Effect.Effect<UpstreamOutcome> =>
      Effect.async<UpstreamOutcome>((resume) => {
        let id = -1
        let settled = false
        const settle = (outcome: UpstreamOutcome) => {
          if (settled) return
          settled = true
          inFlight.delete(id)
          onAnswered?.(outcome)
          // Answers arrive many at once: the slots they free send their next calls before any of these
          // rows' bookkeeping runs, or the last call of a round would wait for all of it (B3).
          queueMicrotask(() => resume(Effect.succeed(outcome)))
        }
        if (inFlight.size === 0) Deferred.unsafeDone(idle, Effect.void)
        id = thread.send(target, upstreamBody(model, body), settle)
        inFlight.set(id, { deadline: clock.unsafeCurrentTimeMillis() + model.timeoutMs, settle })
        return Effect.sync(() => {
          settled = true
          inFlight.delete(id)
          thread.abort(id)
        })
      })
  })
