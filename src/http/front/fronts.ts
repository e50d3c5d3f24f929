import { HttpServerError } from "@effect/platform"
import { Context, Deferred, Effect, Exit, FiberId, Layer, Runtime, Stream } from "effect"
import cluster, { type Worker } from "node:cluster"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { LogHealth } from "../../eventlog/LogHealth.js"
import { Metrics } from "../../metrics/Metrics.js"
import { BatchAccess } from "../batchAccess.js"
import { HttpSettings } from "../settings.js"
import type { FrontAsk, FrontClose, FrontReplies, FrontReply, FrontStanding, FromFront } from "./protocol.js"

/** How long the fronts may take to finish their open requests once told to close. */
const CLOSE_WAIT_MS = 12_000

/** Waits for every front to exit, bounded: they were told to close, and finish what they hold first. */
const frontsExited = (waitMs: number) =>
  Effect.async<void>((resume) => {
    const live = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead())
    if (live.length === 0) return resume(Effect.void)
    let left = live.length
    const timer = setTimeout(() => {
      for (const w of live) if (!w.isDead()) w.process.kill("SIGKILL")
    }, waitMs)
    for (const w of live) {
      w.once("exit", () => {
        if (--left > 0) return
        clearTimeout(timer)
        resume(Effect.void)
      })
    }
  })

/**
 * Where the dispatch process's own server listens for what the fronts hand on: a socket only this
 * machine's processes reach. Made before that server and released after it, once the fronts have exited.
 */
export class FrontSocket extends Context.Tag("Http/FrontSocket")<FrontSocket, { readonly path: string }>() {
  static readonly layer = Layer.scoped(
    FrontSocket,
    Effect.acquireRelease(
      Effect.sync(() => {
        const dir = mkdtempSync(join(tmpdir(), "sluice-"))
        return { dir, path: join(dir, "dispatch.sock") }
      }),
      ({ dir }) => Effect.zipRight(frontsExited(CLOSE_WAIT_MS), Effect.sync(() => rmSync(dir, { recursive: true, force: true }))),
    ),
  )
}

/** The front program beside this module: its bundle next to the server's, or its source run through tsx. */
const frontProgram = () =>
  import.meta.url.endsWith(".ts")
    ? { exec: fileURLToPath(new URL("./frontMain.ts", import.meta.url)), execArgv: [...process.execArgv, "--import", "tsx"] }
    : { exec: fileURLToPath(new URL("./httpFront.mjs", import.meta.url)), execArgv: process.execArgv }


export interface FrontsOptions {
  readonly count: number
  readonly host: string
  readonly port: number
  readonly readModelPath: string
  /** The actors run on the wall clock (not a test's): the fronts read the time themselves instead of asking it. */
  readonly wallClock: boolean
  /** The log's NATS, which the fronts ask themselves what the calls wrote (frontFreshness.ts); none on the embedded log. */
  readonly natsUrl?: string | undefined
}

/**
 * The HTTP fronts: `count` processes that share the public port (the kernel spreads connections over
 * them; this process never accepts one) and answer the polled reads from the read model, handing
 * every other request to this process's server on its private socket. Built once that server
 * listens; closed before it, so that requests in flight through a front are answered while the
 * server drains, and the port is free once the layer is released.
 */
export const frontsLayer = (options: FrontsOptions) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const access = yield* BatchAccess
      const metrics = yield* Metrics
      const socket = yield* FrontSocket
      const settings = yield* HttpSettings
      const health = yield* LogHealth
      const runtime = yield* Effect.runtime<never>()
      const runFork = Runtime.runFork(runtime)

      // The asks of a turn of this loop are answered together, in one fiber: under 200 readers a fiber an
      // ask was most of what the fronts cost this process (B12s profile).
      let waiting: Array<readonly [Worker, ReadonlyArray<FrontAsk>]> = []
      const answerAll = () => {
        const batch = waiting
        waiting = []
        runFork(
          Effect.gen(function* () {
            const reached = yield* Effect.either(access.reachable)
            const now = access.now()
            for (const [worker, asks] of batch) {
              const replies = asks.map((ask): FrontReply => {
                if (reached._tag === "Left") return { t: "reply", id: ask.id, ok: false }
                try {
                  const live = ask.t === "live" ? ask.rows.map((row) => ({ eta: access.etas.ofBatch(row, now), waiting: access.waiting.ofBatch(row) })) : undefined
                  return { t: "reply", id: ask.id, ok: true, now, ...(live === undefined ? {} : { live }) }
                } catch {
                  // Every ask is answered, or its read would wait for ever: this one is handed on, and answered there.
                  return { t: "reply", id: ask.id, ok: false }
                }
              })
              if (worker.isConnected()) worker.send({ t: "replies", replies } satisfies FrontReplies)
            }
          }),
        )
      }
      const answer = (worker: Worker, asks: ReadonlyArray<FrontAsk>) => {
        if (waiting.length === 0) setImmediate(answerAll)
        waiting.push([worker, asks])
      }

      let closing = false
      let serving = false
      const started = new Map<number, { readonly done: Deferred.Deferred<void, HttpServerError.ServeError>; up: boolean }>()
      const onMessage = (worker: Worker) => (message: FromFront) => {
        switch (message.t) {
          case "asks":
            return answer(worker, message.asks)
          case "served":
            for (const r of message.reads) metrics.httpRequest(r.method, r.route, r.status, r.seconds)
            return
          case "listening": {
            const state = started.get(worker.id)!
            state.up = true
            worker.send(standing())
            // Up just as the service stops: it closes with the others.
            if (closing) worker.send({ t: "close" } satisfies FrontClose)
            return Deferred.unsafeDone(state.done, Exit.void)
          }
          case "listen_failed":
            return void Deferred.unsafeDone(
              started.get(worker.id)!.done,
              Exit.fail(new HttpServerError.ServeError({ cause: Object.assign(new Error(message.message), { code: message.code }) })),
            )
        }
      }

      // The kernel hands connections to the fronts' own accepts (not round-robin through this process).
      cluster.schedulingPolicy = cluster.SCHED_NONE
      cluster.setupPrimary({ ...frontProgram(), silent: false })
      const env = {
        SLUICE_FRONT_SOCKET: socket.path,
        SLUICE_FRONT_READ_MODEL: options.readModelPath,
        SLUICE_FRONT_FRESH: String(settings.freshReads === true),
        SLUICE_FRONT_CLOCK: options.wallClock ? "wall" : "actors",
        ...(options.natsUrl === undefined ? {} : { SLUICE_FRONT_NATS: options.natsUrl }),
        SLUICE_HOST: options.host,
        SLUICE_PORT: String(options.port),
      }
      const fork = () => {
        const worker = cluster.fork(env)
        const state = { done: Deferred.unsafeMake<void, HttpServerError.ServeError>(FiberId.none), up: false }
        started.set(worker.id, state)
        worker.on("message", onMessage(worker))
        worker.on("exit", (code, signal) => {
          started.delete(worker.id)
          if (!state.up) {
            const cause = new Error(`an HTTP front exited as it started (${signal ?? code})`)
            Deferred.unsafeDone(state.done, Exit.fail(new HttpServerError.ServeError({ cause })))
          }
          // One of the first that does not start fails the service's start; later, any that exits is
          // replaced, unless the service is stopping.
          if (!serving || closing) return
          runFork(Effect.logWarning(`an HTTP front exited (${signal ?? code}); starting another`))
          setTimeout(() => closing || fork(), 1_000).unref()
        })
        return state
      }
      // The log's standing, pushed as it changes: a read on a front then asks nothing of this process to know it.
      const standing = (): FrontStanding => ({ t: "standing", logUp: health.unavailable() === undefined })
      yield* Effect.forkScoped(
        Stream.runForEach(health.changes, () =>
          Effect.sync(() => {
            for (const w of Object.values(cluster.workers ?? {})) if (w !== undefined && w.isConnected() && started.get(w.id)?.up === true) w.send(standing())
          }),
        ),
      )
      const first = Array.from({ length: options.count }, fork)
      // Told before this process's server drains: they stop taking connections and finish the open ones,
      // which the server answers; FrontSocket's release waits for them to exit.
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          closing = true
          for (const w of Object.values(cluster.workers ?? {})) {
            if (w === undefined || !w.isConnected()) continue
            // One still starting holds no connection, and could miss a message sent before it listens for them.
            if (started.get(w.id)?.up === true) w.send({ t: "close" } satisfies FrontClose)
            else w.process.kill("SIGKILL")
          }
        }),
      )
      yield* Effect.forEach(first, (state) => Deferred.await(state.done), { discard: true })
      serving = true
      yield* Effect.logInfo(
        `${options.count} HTTP front${options.count === 1 ? "" : "s"} serve the port; this process answers what they hand on at ${socket.path}`,
      )
    }),
  )
