import { Deferred, Duration, Effect, FiberId } from "effect"
import { type Dispatcher, Pool } from "undici"
import type { ModelEntry } from "../config/Catalog.js"
import type { UpstreamOutcome } from "../domain/upstream/UpstreamOutcome.js"

const retryAfterMs = (header: string | undefined, now: number): number | undefined => {
  if (header === undefined) return undefined
  const seconds = Number(header)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(header)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** The stored body names the public model id; the upstream may know it by another name. */
const upstreamBody = (model: ModelEntry, body: string): string => {
  if (model.upstreamModel === model.id) return body
  const parsed = JSON.parse(body) as Record<string, unknown>
  return JSON.stringify({ ...parsed, model: model.upstreamModel })
}

// One keep-alive pool per upstream origin. undici's dispatcher takes about half the CPU of node:http per
// request (16 against 34 µs, measured against the simulator), and fetch far more than either.
const pools = new Map<string, Pool>()
const poolFor = (url: URL, slots: number) => {
  let pool = pools.get(url.origin)
  if (pool === undefined) {
    // Timeouts are the caller's, on the actors' clock: undici's own (300 s by default) are off.
    pool = new Pool(url.origin, { connections: Math.max(slots, 16) * 2, headersTimeout: 0, bodyTimeout: 0 })
    pools.set(url.origin, pool)
  }
  return pool
}

interface Target {
  readonly pool: Pool
  readonly path: string
  /** Worked out once per model. */
  readonly headers: Record<string, string>
}

const targetOf = (model: ModelEntry): Target => {
  const url = new URL(`${model.upstreamUrl}/chat/completions`)
  const basic = url.username === "" ? undefined : `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`
  const authorization =
    model.apiKey !== undefined ? `Bearer ${model.apiKey}` : basic !== undefined ? `Basic ${Buffer.from(basic).toString("base64")}` : undefined
  return {
    pool: poolFor(url, model.batchConcurrency),
    path: `${url.pathname}${url.search}`,
    headers: { "content-type": "application/json", ...(authorization === undefined ? {} : { authorization }) },
  }
}

const header = (value: string | Array<string> | undefined) => (Array.isArray(value) ? value[0] : value)

/**
 * Sends one attempt, handing `onStart` the function that aborts it (again once the request has begun),
 * so that a timeout can end it: an AbortSignal per call cost more than the rest of the call's setup.
 * Every way it can end is an outcome, but for the connection failing before an answer began, which rejects.
 */
const post = (model: ModelEntry, target: Target, body: string, onStart: (abort: () => void) => void) =>
  new Promise<UpstreamOutcome>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let status = 0
    let retryAfter: string | undefined
    let answering = false
    // A timeout can come while the request still waits for a connection, before undici hands it a controller.
    let abortedEarly = false
    onStart(() => void (abortedEarly = true))
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: (controller) => {
        const abort = () => controller.abort(new Error("The request timed out"))
        if (abortedEarly) abort()
        else onStart(abort)
      },
      onResponseStart: (_controller, statusCode, headers) => {
        answering = true
        status = statusCode
        retryAfter = header(headers["retry-after"])
      },
      onResponseData: (_controller, chunk) => {
        chunks.push(chunk)
      },
      onResponseEnd: () => {
        const text = Buffer.concat(chunks).toString("utf8")
        let parsed: unknown
        try {
          parsed = JSON.parse(text)
        } catch {
          if (status >= 200 && status < 300) {
            resolve({ _tag: "NetworkError", message: "The model server sent an incomplete response" })
            return
          }
          parsed = text
        }
        const after = retryAfterMs(retryAfter, Date.now())
        resolve(
          after === undefined
            ? { _tag: "Response", status, body: parsed }
            : { _tag: "Response", status, body: parsed, retryAfterMs: after },
        )
      },
      onResponseError: (_controller, error) => {
        if (answering) resolve({ _tag: "NetworkError", message: "The model server closed the connection mid-response" })
        else reject(error)
      },
    }
    target.pool.dispatch({ path: target.path, method: "POST", headers: target.headers, body: upstreamBody(model, body) }, handler)
  })

const unreachable = (error: unknown): UpstreamOutcome => ({
  _tag: "NetworkError",
  message: `The model server could not be reached: ${error instanceof Error ? error.message : String(error)}`,
})

interface InFlight {
  readonly deadline: number
  abort: (() => void) | undefined
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
    const target = targetOf(model)
    const inFlight = new Map<number, InFlight>()
    let nextId = 0
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
          call.abort?.()
          call.settle({ _tag: "Timeout" })
        }
      }
    })
    yield* Effect.forkScoped(sweep)

    /** `onAnswered` runs as soon as the call ends, before the caller's fiber resumes: a slot can be freed at once. */
    return (body: string, onAnswered?: (outcome: UpstreamOutcome) => void): Effect.Effect<UpstreamOutcome> =>
      Effect.async<UpstreamOutcome>((resume) => {
        const id = nextId++
        let settled = false
        const settle = (outcome: UpstreamOutcome) => {
          if (settled) return
          settled = true
          inFlight.delete(id)
          onAnswered?.(outcome)
          resume(Effect.succeed(outcome))
        }
        if (inFlight.size === 0) Deferred.unsafeDone(idle, Effect.void)
        const call: InFlight = { deadline: clock.unsafeCurrentTimeMillis() + model.timeoutMs, abort: undefined, settle }
        inFlight.set(id, call)
        post(model, target, body, (abort) => (call.abort = abort)).then(settle, (error) => settle(unreachable(error)))
        return Effect.sync(() => {
          settled = true
          inFlight.delete(id)
          call.abort?.()
        })
      })
  })
