import { Effect, type Scope } from "effect"
import { Worker } from "node:worker_threads"
import { retryAfterMs } from "../domain/retry/retryAfter.js"
import type { UpstreamOutcome } from "../domain/upstream/UpstreamOutcome.js"

/** Where one model's batch calls go: node:http's options, worked out once per model. */
export interface UpstreamTarget {
  readonly https: boolean
  readonly hostname: string
  readonly port?: number
  readonly path: string
  readonly auth?: string
  readonly apiKey?: string
  readonly maxSockets: number
}

export interface UpstreamThread {
  /** Registers where a model's calls go; answers the number its calls name. */
  readonly target: (target: UpstreamTarget) => number
  /**
   * Sends one call. `onOutcome` runs once: with the answer, or a network error if the thread stops first.
   * A call beyond the target's limit waits in the thread for a slot: `onHeld(true)` says it waits,
   * `onHeld(false)` that it has been sent. A call that reaches the thread after `notAfter` (wall-clock
   * ms) is not sent and answers a network error. `path` sends it elsewhere on the target's server (an
   * embeddings row's call), in the target's slots all the same.
   */
  readonly send: (
    target: number,
    body: string,
    onOutcome: (outcome: UpstreamOutcome) => void,
    onHeld?: (held: boolean) => void,
    notAfter?: number,
    path?: string,
  ) => number
  /** At most `limit` of the target's calls at its server at once (unlimited until set). */
  readonly limit: (target: number, limit: number) => void
  /** The call's answer is no longer wanted: its request is destroyed and `onOutcome` never runs. */
  readonly abort: (id: number) => void
  /** Ends the thread. Calls in flight end as network errors; the next call starts a new thread. */
  readonly stop: () => Promise<void>
}

interface ToWorker {
  readonly targets: Array<readonly [number, UpstreamTarget]>
  readonly calls: Array<{ readonly id: number; readonly target: number; readonly body: string; readonly notAfter?: number; readonly path?: string }>
  readonly aborts: Array<number>
  readonly limits: Array<readonly [number, number]>
}

/** As the thread answers: a Response carries its `Retry-After` header as sent. */
type WorkerOutcome = UpstreamOutcome | (UpstreamOutcome & { readonly _tag: "Response"; readonly retryAfter?: string })

const fromWorker = (outcome: WorkerOutcome): UpstreamOutcome => {
  if (outcome._tag !== "Response" || !("retryAfter" in outcome)) return outcome
  const { retryAfter, ...response } = outcome
  const ms = retryAfterMs(retryAfter, Date.now())
  return ms === undefined ? response : { ...response, retryAfterMs: ms }
}

interface FromWorker {
  readonly answers: ReadonlyArray<readonly [number, WorkerOutcome]>
  /** Calls that were held and have been sent since. */
  readonly launched: ReadonlyArray<number>
  /** Calls held on arrival, for want of a slot. */
  readonly held: ReadonlyArray<number>
}

/**
 * The batch calls' HTTP, on a thread of its own: sending a request and parsing its answer was a large
 * share of the main thread's work per row, and through the thread, with one message each way per turn
 * of the event loop, it is a small one.
 */
const makeThread = (): UpstreamThread => {
  const targets: Array<UpstreamTarget> = []
  const limits = new Map<number, number>()
  const waiting = new Map<number, (outcome: UpstreamOutcome) => void>()
  const holds = new Map<number, (held: boolean) => void>()
  let worker: Worker | undefined
  let outbox: ToWorker | undefined
  let nextId = 0

  const flush = () => {
    const message = outbox
    outbox = undefined
    if (message !== undefined) worker?.postMessage(message)
  }
  const queue = (): ToWorker => {
    if (outbox === undefined) {
      outbox = { targets: [], calls: [], aborts: [], limits: [] }
      queueMicrotask(flush)
    }
    return outbox
  }
  const stopped = (from: Worker, reason: string) => {
    if (worker !== from) return
    worker = undefined
    outbox = undefined
    const lost = [...waiting.values()]
    waiting.clear()
    holds.clear()
    for (const settle of lost) settle({ _tag: "NetworkError", message: `The model server could not be reached: ${reason}` })
  }
  const start = () => {
    const started = new Worker(new URL("./upstreamWorker.mjs", import.meta.url))
    started.unref()
    started.on("message", ({ answers, launched, held }: FromWorker) => {
      for (const id of held) holds.get(id)?.(true)
      for (const id of launched) holds.get(id)?.(false)
      for (const [id, outcome] of answers) {
        const settle = waiting.get(id)
        if (settle === undefined) continue
        waiting.delete(id)
        holds.delete(id)
        settle(fromWorker(outcome))
      }
    })
    started.on("error", (error) => stopped(started, `the upstream thread failed: ${error.message}`))
    started.on("exit", (code) => stopped(started, `the upstream thread stopped (exit code ${code})`))
    worker = started
    queue().targets.push(...targets.map((t, i) => [i, t] as const))
    queue().limits.push(...limits)
  }

  return {
    target: (target) => {
      targets.push(target)
      const index = targets.length - 1
      if (worker !== undefined) queue().targets.push([index, target])
      return index
    },
    send: (target, body, onOutcome, onHeld, notAfter, path) => {
      if (worker === undefined) start()
      const id = nextId++
      waiting.set(id, onOutcome)
      if (onHeld !== undefined) holds.set(id, onHeld)
      const call = notAfter === undefined || notAfter === Number.POSITIVE_INFINITY ? { id, target, body } : { id, target, body, notAfter }
      queue().calls.push(path === undefined ? call : { ...call, path })
      return id
    },
    limit: (target, limit) => {
      limits.set(target, limit)
      if (worker !== undefined) queue().limits.push([target, limit])
    },
    abort: (id) => {
      holds.delete(id)
      if (waiting.delete(id) && worker !== undefined) queue().aborts.push(id)
    },
    stop: async () => {
      const running = worker
      if (running === undefined) return
      stopped(running, "the upstream thread was stopped")
      await running.terminate()
    },
  }
}

let shared: { readonly thread: UpstreamThread; users: number } | undefined

/** The process's upstream thread, shared by every model (and every service in the process) that holds it. */
export const upstreamThread: Effect.Effect<UpstreamThread, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => {
    shared ??= { thread: makeThread(), users: 0 }
    shared.users++
    return shared.thread
  }),
  () =>
    Effect.promise(async () => {
      if (shared === undefined || --shared.users > 0) return
      const { thread } = shared
      shared = undefined
      await thread.stop()
    }),
)
