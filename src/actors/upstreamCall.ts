import { Deferred, Duration, Effect, FiberId } from "effect"
import type { ModelEntry } from "../config/Catalog.js"
import type { UpstreamPath } from "../domain/batch/rowCall.js"
import type { UpstreamOutcome } from "../domain/upstream/UpstreamOutcome.js"
import { type UpstreamTarget, upstreamThread } from "./upstreamThread.js"

/** The stored body names the public model id; the upstream may know it by another name. */
const upstreamBody = (model: ModelEntry, body: string): string => {
  if (model.upstreamModel === model.id) return body
  const parsed = JSON.parse(body) as Record<string, unknown>
  return JSON.stringify({ ...parsed, model: model.upstreamModel })
}

const pathOf = (url: URL) => `${url.pathname}${url.search}`

const targetOf = (model: ModelEntry): UpstreamTarget => {
  const url = new URL(`${model.upstreamUrl}/chat/completions`)
  return {
    https: url.protocol === "https:",
    hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
    ...(url.port === "" ? {} : { port: Number(url.port) }),
    path: pathOf(url),
    ...(url.username === "" ? {} : { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` }),
    ...(model.apiKey === undefined ? {} : { apiKey: model.apiKey }),
    maxSockets: Math.max(model.batchConcurrency, 16) * 2,
  }
}

interface InFlight {
  /** Infinity while the call waits in the upstream thread for a slot: its timeout runs from when it is sent. */
  deadline: number
  /** When the request was sent (performance.now()), for its latency: wall time, whatever clock the actors run on. */
  sentAt: number
  readonly settle: (outcome: UpstreamOutcome) => void
}

export interface UpstreamCaller {
  /** One attempt of one row, which never fails: every way it can end is an outcome. */
  readonly call: (
    body: string,
    onAnswered?: (outcome: UpstreamOutcome, seconds: number) => void,
    /** Wall-clock ms after which the call is not sent (the lease it runs under may be another's by then). */
    notAfter?: number,
    /** Where it goes after the model's URL: `/chat/completions` when absent. */
    to?: UpstreamPath,
  ) => Effect.Effect<UpstreamOutcome>
  /**
   * `call` without an effect, for the row path's plain code: `answered` runs with the outcome (in a
   * microtask after `onAnswered`). Answers a function that aborts the call and drops its answer.
   */
  readonly start: (
    body: string,
    onAnswered: ((outcome: UpstreamOutcome, seconds: number) => void) | undefined,
    notAfter: number | undefined,
    to: UpstreamPath | undefined,
    answered: (outcome: UpstreamOutcome) => void,
  ) => () => void
  /** At most this many calls at the model at once; calls beyond it wait in the upstream thread. */
  readonly limit: (slots: number) => void
  /** The calls waiting in the upstream thread for a slot, as far as its reports have come. */
  readonly held: () => number
}

/**
 * The model's upstream calls. Timeouts run on the actors' clock, but not as a race per call, whose
 * sleeping fiber per request was a large part of a row's CPU: one fiber sleeps until the earliest
 * deadline and aborts whatever has passed it. The calls in flight are few (the model's
 * slots and the few held beyond them), so finding the earliest is a scan.
 */
export const makeUpstreamCaller = (model: ModelEntry) =>
  Effect.gen(function* () {
    const clock = yield* Effect.clock
    const thread = yield* upstreamThread
    const target = thread.target(targetOf(model))
    const embeddingsPath = pathOf(new URL(`${model.upstreamUrl}/embeddings`))
    const inFlight = new Map<number, InFlight>()
    // Completed when a deadline is set while the sweep has none to wait for.
    let armed = Deferred.unsafeMake<void>(FiberId.none)

    const earliest = () => {
      let first = Number.POSITIVE_INFINITY
      for (const call of inFlight.values()) if (call.deadline < first) first = call.deadline
      return first
    }
    const sweep = Effect.gen(function* () {
      while (true) {
        const first = earliest()
        if (first === Number.POSITIVE_INFINITY) {
          yield* Deferred.await(armed)
          armed = Deferred.unsafeMake<void>(FiberId.none)
          continue
        }
        const now = clock.unsafeCurrentTimeMillis()
        if (first > now) {
          // Deadlines set meanwhile are later: every call has the same timeout.
          yield* clock.sleep(Duration.millis(first - now))
          continue
        }
        for (const [id, call] of inFlight) {
          if (call.deadline > now) continue
          inFlight.delete(id)
          thread.abort(id)
          call.settle({ _tag: "Timeout" })
        }
      }
    })
    yield* Effect.forkScoped(sweep)
    const arm = (call: InFlight) => {
      call.sentAt = performance.now()
      call.deadline = clock.unsafeCurrentTimeMillis() + model.timeoutMs
      Deferred.unsafeDone(armed, Effect.void)
    }

    let limited = -1
    const limit = (slots: number) => {
      if (slots === limited) return
      limited = slots
      thread.limit(target, slots)
    }

    /** `onAnswered` runs as soon as the call ends, before `answered`: a slot can be freed at once. */
    const start = (
      body: string,
      onAnswered: ((outcome: UpstreamOutcome, seconds: number) => void) | undefined,
      notAfter: number | undefined,
      to: UpstreamPath | undefined,
      answered: (outcome: UpstreamOutcome) => void,
    ): (() => void) => {
      let id = -1
      let settled = false
      const settle = (outcome: UpstreamOutcome) => {
        if (settled) return
        settled = true
        inFlight.delete(id)
        onAnswered?.(outcome, (performance.now() - entry.sentAt) / 1000)
        // Answers arrive many at once: the slots they free send their next calls before any of these
        // rows' bookkeeping runs, or the last call of a round would wait for all of it.
        queueMicrotask(() => answered(outcome))
      }
      const entry: InFlight = { deadline: Number.POSITIVE_INFINITY, sentAt: performance.now(), settle }
      id = thread.send(
        target,
        upstreamBody(model, body),
        settle,
        (held) => {
          if (held) entry.deadline = Number.POSITIVE_INFINITY
          else arm(entry)
        },
        notAfter,
        to === "/embeddings" ? embeddingsPath : undefined,
      )
      inFlight.set(id, entry)
      arm(entry)
      return () => {
        settled = true
        inFlight.delete(id)
        thread.abort(id)
      }
    }

    const call = (
      body: string,
      onAnswered?: (outcome: UpstreamOutcome, seconds: number) => void,
      notAfter?: number,
      to?: UpstreamPath,
    ): Effect.Effect<UpstreamOutcome> =>
      Effect.async<UpstreamOutcome>((resume) => {
        const abort = start(body, onAnswered, notAfter, to, (outcome) => resume(Effect.succeed(outcome)))
        return Effect.sync(abort)
      })

    const held = () => {
      let n = 0
      for (const entry of inFlight.values()) if (entry.deadline === Number.POSITIVE_INFINITY) n++
      return n
    }

    return { call, start, limit, held } satisfies UpstreamCaller
  })
