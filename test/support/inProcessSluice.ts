import { Chunk, Context, Effect, Exit, Fiber, Layer, Logger, LogLevel, Option, Redacted, Scope, TestClock, TestContext, TestServices } from "effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { appLayer } from "../../src/app.js"
import type { SluiceConfig } from "../../src/config/Config.js"
import { freePort } from "./ports.js"
import { ADMIN_TOKEN, BOOTSTRAP_KEY, type CatalogEntry } from "./sluice.js"

export interface InProcessSluice {
  readonly url: string
  /** Moves the actors' TestClock forward, running every backoff, expiry or timeout due by then. */
  readonly adjust: (ms: number) => Promise<void>
  readonly now: () => Promise<number>
  readonly dataDir: string
  readonly stop: () => Promise<void>
}

/**
 * Sluice in the test process, serving real HTTP on loopback, with its actors on a TestClock so
 * that backoff and other time-driven rules run in milliseconds. The upstream stays a real server.
 */
export const startInProcessSluice = async (options: {
  readonly models: ReadonlyArray<CatalogEntry>
  readonly natsUrl?: string
  /** Reuse a data directory (a restart); a fresh temporary one otherwise. */
  readonly dataDir?: string
  /** Leave the data directory in place on stop, for another instance to start on. */
  readonly keepData?: boolean
  /** Where the TestClock starts (ms); now by default. A restart passes the stopped instance's `now()`. */
  readonly startAt?: number
  readonly config?: Partial<Pick<SluiceConfig, "completionWindowHours" | "retentionDays" | "maxUnfinishedBatches">>
}): Promise<InProcessSluice> => {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "sluice-inproc-"))
  mkdirSync(dataDir, { recursive: true })
  const modelsPath = join(dataDir, "models.json")
  writeFileSync(modelsPath, JSON.stringify({ models: options.models }))
  const port = await freePort()
  const config: SluiceConfig = {
    port,
    host: "127.0.0.1",
    dataDir,
    natsUrl: Option.fromNullable(options.natsUrl),
    natsReplicas: 1,
    natsAllowOldServer: false,
    modelsPath: Option.some(modelsPath),
    bootstrapKey: Option.some(Redacted.make(BOOTSTRAP_KEY)),
    adminToken: Option.some(Redacted.make(ADMIN_TOKEN)),
    completionWindowHours: 24,
    retentionDays: 7,
    maxUnfinishedBatches: 10,
    runModels: true,
    // The app composed in the test's own process serves HTTP from it (appLayer forks fronts only when asked).
    httpWorkers: 0,
    instanceId: `inproc-${port}`,
    leaseTtlMs: 10_000,
    metricsToken: Option.none(),
    corsOrigins: [],
    readyMaxLagSeconds: 30,
    logFormat: "text",
    logLevel: LogLevel.Info,
    ...options.config,
  }
  const scope = Effect.runSync(Scope.make())
  const clockLayer = TestClock.live(TestClock.makeData(options.startAt ?? Date.now(), Chunk.empty())).pipe(
    Layer.provide(Layer.merge(TestServices.liveLayer(), TestServices.annotationsLayer())),
    Layer.provide(TestContext.LiveContext),
  )
  const clock = await Effect.runPromise(
    Layer.buildWithScope(clockLayer, scope).pipe(Effect.map((ctx) => Context.get(ctx, TestClock.TestClock))),
  )
  // Warnings and errors only: a line per request would bury the test's own output.
  const fiber = Effect.runFork(Layer.launch(appLayer(config, { clock })).pipe(Logger.withMinimumLogLevel(LogLevel.Warning)))
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 30_000
  for (;;) {
    const exit = fiber.unsafePoll()
    if (exit !== null) throw new Error(`sluice stopped during start: ${String(Exit.isFailure(exit) ? exit.cause : exit)}`)
    try {
      // Still running once it answers: a server that took the port first would answer while this one's listen failed.
      if ((await fetch(`${url}/openapi.json`)).ok && fiber.unsafePoll() === null) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error("in-process sluice did not start within 30 s")
    await new Promise((r) => setTimeout(r, 25))
  }
  return {
    url,
    adjust: (ms) => Effect.runPromise(clock.adjust(ms)),
    now: () => Effect.runPromise(clock.currentTimeMillis),
    dataDir,
    stop: async () => {
      await Effect.runPromise(Fiber.interrupt(fiber))
      await Effect.runPromise(Scope.close(scope, Exit.void))
      if (options.keepData !== true) rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
