import { afterAll, afterEach, beforeAll } from "vitest"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import type { SimulatorOptions } from "../../src/sim/SimulatorOptions.js"
import { client } from "./client.js"
import { type InProcessSluice, startInProcessSluice } from "./inProcessSluice.js"
import { type NatsServer, startNatsServer } from "./natsServer.js"
import { type CatalogEntry, type Sluice, type SluiceOptions, startSluice, type TestClockControls } from "./sluice.js"

type InProcessOptions = Parameters<typeof startInProcessSluice>[0]

/** How a Sluice is started, beyond the fixture's log and catalog: a test's `start()` may override each. */
export type ProcessStart = Omit<SluiceOptions, "natsUrl" | "models"> & { readonly models?: ReadonlyArray<CatalogEntry> }
export type InProcessStart = Omit<InProcessOptions, "natsUrl" | "models"> & { readonly models?: ReadonlyArray<CatalogEntry> }

interface Options {
  /** The event log: the embedded SQLite file (default), or a nats-server of the fixture's own. */
  readonly log?: "embedded" | "nats"
  /** The catalog, given the simulator's base URL. */
  readonly models: (simUrl: string) => ReadonlyArray<CatalogEntry> | Promise<ReadonlyArray<CatalogEntry>>
  readonly simulator?: SimulatorOptions
  /**
   * `file` (default): one Sluice for the file's tests, started before the first. `test`: each test
   * starts what it needs with `start()`, and everything it started is stopped after it.
   */
  readonly lifetime?: "file" | "test"
  /**
   * How a process Sluice is stopped after the test: `graceful` (SIGTERM, the default) lets running rows
   * finish for up to 30 s; `kill` (SIGKILL) does not wait for rows that hang, and so the next test gets
   * a nats-server of its own.
   */
  readonly teardown?: "graceful" | "kill"
}

export interface SluiceFixture<S, O> {
  readonly sim: Simulator
  /** The fixture's nats-server, on `log: "nats"`. */
  readonly nats: NatsServer | undefined
  readonly natsUrl: string | undefined
  /** The catalog Sluice is started with. */
  readonly models: ReadonlyArray<CatalogEntry>
  /** The Sluice started last. */
  readonly sluice: S
  /** A client of whichever Sluice was started last when it calls, with the bootstrap key unless given another. */
  api(key?: string): ReturnType<typeof client>
  /** Starts a Sluice on the fixture's simulator and log; it is stopped, gracefully, after the test (or the file). */
  start(overrides?: O): Promise<S>
  /** Stops every Sluice started so far, as after the test, and removes the data directories the fixture made. */
  stop(): Promise<void>
}

interface Started {
  readonly stop: () => Promise<unknown>
  readonly cleanup: () => void
  killed: boolean
}

/**
 * A simulator, a nats-server when the log is NATS, and Sluice on them, each stopped after the file.
 * A Sluice is stopped with SIGTERM, which hands its model leases over at once. One killed instead (by
 * the test's `stop("SIGKILL")`, or `teardown: "kill"`) leaves its leases held on the nats-server for the
 * lease TTL, where the next instance's models would not run: so the next test gets a nats-server of its own.
 */
export function withSluice(options: Options & { readonly inProcess: true; readonly sluice?: InProcessStart }): SluiceFixture<InProcessSluice, InProcessStart>
export function withSluice(
  options: Options & { readonly inProcess?: false; readonly sluice: ProcessStart & { readonly testClock: { readonly startMs?: number } } },
): SluiceFixture<Sluice & TestClockControls, ProcessStart>
export function withSluice(options: Options & { readonly inProcess?: false; readonly sluice?: ProcessStart }): SluiceFixture<Sluice, ProcessStart>
export function withSluice(
  options: Options & { readonly inProcess?: boolean; readonly sluice?: ProcessStart | InProcessStart },
): SluiceFixture<Sluice | InProcessSluice, ProcessStart | InProcessStart> {
  let sim: Simulator | undefined
  let nats: NatsServer | undefined
  let models: ReadonlyArray<CatalogEntry> = []
  let current: Sluice | InProcessSluice | undefined
  let running: Array<Started> = []
  // A test stopped an instance it had killed: its leases are still held on the nats-server.
  let killedAny = false

  const launch = async (overrides: ProcessStart | InProcessStart = {}) => {
    const merged = { models, ...options.sluice, ...overrides, ...(nats === undefined ? {} : { natsUrl: nats.url }) }
    if (options.inProcess === true) {
      const s = await startInProcessSluice(merged as InProcessOptions)
      running.push({ stop: s.stop, cleanup: () => undefined, killed: false })
      return (current = s)
    }
    const s = await startSluice(merged as SluiceOptions)
    const kill = options.teardown === "kill"
    const started: Started = {
      stop: () => s.stop(kill ? "SIGKILL" : "SIGTERM"),
      cleanup: () => (merged.dataDir === undefined ? s.cleanup() : undefined),
      killed: kill,
    }
    running.push(started)
    const stop = (signal?: NodeJS.Signals) => {
      if (signal === "SIGKILL") started.killed = true
      return s.stop(signal)
    }
    return (current = { ...s, stop })
  }

  const stopAll = async () => {
    const stopping = running
    running = []
    current = undefined
    for (const s of stopping) await s.stop()
    for (const s of stopping) s.cleanup()
    return stopping.some((s) => s.killed)
  }

  beforeAll(async () => {
    sim = await startSimulator(options.simulator)
    models = await options.models(sim.url)
    if (options.log === "nats") nats = await startNatsServer()
    if (options.lifetime !== "test") await launch()
  })
  afterEach(async () => {
    if (options.lifetime !== "test") return
    const killed = (await stopAll()) || killedAny
    killedAny = false
    if (killed && nats !== undefined) {
      await nats.stop()
      nats = await startNatsServer()
    }
  })
  afterAll(async () => {
    await stopAll()
    await nats?.stop()
    await sim?.close()
  })

  return {
    get sim() {
      if (sim === undefined) throw new Error("withSluice: the simulator starts in beforeAll")
      return sim
    },
    get nats() {
      return nats
    },
    get natsUrl() {
      return nats?.url
    },
    get models() {
      return models
    },
    get sluice() {
      if (current === undefined) throw new Error("withSluice: no Sluice is running; start() one")
      return current
    },
    api: (key) =>
      client(() => {
        if (current === undefined) throw new Error("withSluice: no Sluice is running; start() one")
        return current.url
      }, key),
    start: launch,
    stop: async () => {
      killedAny = (await stopAll()) || killedAny
    },
  }
}
