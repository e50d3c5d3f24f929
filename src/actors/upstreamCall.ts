import { Deferred, Duration, Effect, FiberId } from "effect"
import http from "node:http"
import https from "node:https"
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

// One keep-alive pool per upstream; node:http costs a fraction of fetch's per-request overhead.
const agents = new Map<string, http.Agent>()
const agentFor = (url: URL, slots: number) => {
  const key = `${url.protocol}//${url.host}`
  let agent = agents.get(key)
  if (agent === undefined) {
    const options = { keepAlive: true, maxSockets: Math.max(slots, 16) * 2 }
    agent = url.protocol === "https:" ? new https.Agent(options) : new http.Agent(options)
    agents.set(key, agent)
  }
  return agent
}

interface Target {
  readonly client: typeof http | typeof https
  /** Worked out once per model: node:http would otherwise convert a URL into these on every request. */
  readonly options: http.RequestOptions
}

const targetOf = (model: ModelEntry): Target => {
  const url = new URL(`${model.upstreamUrl}/chat/completions`)
  return {
    client: url.protocol === "https:" ? https : http,
    options: {
      protocol: url.protocol,
      hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
      port: url.port === "" ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      method: "POST",
      ...(url.username === "" ? {} : { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` }),
      agent: agentFor(url, model.batchConcurrency),
    },
  }
}

/**
 * Sends one attempt, handing the request to `onRequest` so that a timeout can destroy it (an AbortSignal
 * per call cost more than the rest of the call's setup).
 */
const post = (model: ModelEntry, target: Target, body: string, onRequest: (request: http.ClientRequest) => void) =>
  new Promise<UpstreamOutcome>((resolve, reject) => {
    const payload = Buffer.from(upstreamBody(model, body))
    const request = target.client.request(
      {
        ...target.options,
        headers: {
          "content-type": "application/json",
          "content-length": payload.length,
          ...(model.apiKey === undefined ? {} : { authorization: `Bearer ${model.apiKey}` }),
        },
      },
      (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("error", reject)
        response.on("end", () => {
          if (!response.complete) {
            resolve({ _tag: "NetworkError", message: "The model server closed the connection mid-response" })
            return
          }
          const status = response.statusCode ?? 0
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
          const after = retryAfterMs(response.headers["retry-after"], Date.now())
          resolve(
            after === undefined
              ? { _tag: "Response", status, body: parsed }
              : { _tag: "Response", status, body: parsed, retryAfterMs: after },
          )
        })
      },
    )
    request.on("error", reject)
    onRequest(request)
    request.end(payload)
  })

const unreachable = (error: unknown): UpstreamOutcome => ({
  _tag: "NetworkError",
  message: `The model server could not be reached: ${error instanceof Error ? error.message : String(error)}`,
})

interface InFlight {
  readonly deadline: number
  request: http.ClientRequest | undefined
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
          call.request?.destroy()
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
        const call: InFlight = { deadline: clock.unsafeCurrentTimeMillis() + model.timeoutMs, request: undefined, settle }
        inFlight.set(id, call)
        post(model, target, body, (request) => (call.request = request)).then(settle, (error) => settle(unreachable(error)))
        return Effect.sync(() => {
          settled = true
          inFlight.delete(id)
          call.request?.destroy()
        })
      })
  })
