import { type CatalogEntry, MODELS, type Sim, type Sluice, freePort, simUrl, startNats, startSim, startSluice, startStub } from "./processes.js"
import { type SluiceApi, sluiceApi } from "./sluiceApi.js"

/** Every size the scenarios use; `--quick` shrinks them so the whole run is a smoke check. */
export interface Sizes {
  readonly trials: number
  readonly slots: number
  readonly latencyMs: number
  readonly b1Rows: number
  readonly b1Bytes: number
  readonly throughputRows: number
  readonly b4BigRows: number
  readonly b4SmallRows: number
  readonly b4DelayMs: number
  readonly b5Pages: number
  readonly b5Lists: number
  readonly b6Batches: number
  /** Fewer on the NATS log: writing and reading 1M events through JetStream takes minutes. */
  readonly b6NatsBatches: number
  readonly b6RowsPerBatch: number
  readonly b7Batches: number
  readonly b7Rows: number
  readonly b7SettleMs: number
  readonly b12Readers: number
  /** Each reader's pause between one answer and its next request. */
  readonly b12PauseMs: number
  readonly b13Batches: number
  readonly b13Rows: number
  /** Rows completed before B13 starts its window, and the window's rows. */
  readonly b13SteadyRows: number
  readonly b13WindowRows: number
  /** Completions B15's waiting consumer times on each log, a trial (p99 by nearest rank). */
  readonly b15Completions: number
  /** B16's requests of each kind, flex and interactive, a trial. */
  readonly b16Requests: number
  /** B17's input file: its lines and its size in bytes (MB = 10^6). */
  readonly b17Lines: number
  readonly b17Bytes: number
  /** B18: the `standard` backlog (batches × rows) a `high` batch of b18HighRows is created behind. */
  readonly b18BacklogBatches: number
  readonly b18BacklogRows: number
  readonly b18HighRows: number
  /** B18's share: a `high` and a `standard` batch of b18ShareRows each, cancelled after b18ShareStarts `high` rows. */
  readonly b18ShareRows: number
  readonly b18ShareStarts: number
  /** B18's `standard` batch timed alone and beside a `background` one of b18ShareRows. */
  readonly b18StandardRows: number
  /** B18's deadlines: the completion window, and the rows that measure a model's rate first. */
  readonly b18WindowS: number
  readonly b18RateRows: number
}

const MiB = 1024 * 1024

export const FULL: Sizes = {
  trials: 3,
  slots: 64,
  latencyMs: 50,
  b1Rows: 50_000,
  // "About 32 MiB", under the 32 MiB create limit.
  b1Bytes: 31.5 * MiB,
  throughputRows: 20_000,
  b4BigRows: 20_000,
  b4SmallRows: 200,
  b4DelayMs: 1_000,
  b5Pages: 100,
  b5Lists: 50,
  b6Batches: 10,
  b6NatsBatches: 1,
  b6RowsPerBatch: 50_000,
  b7Batches: 20,
  b7Rows: 50_000,
  b7SettleMs: 3_000,
  b12Readers: 200,
  b12PauseMs: 250,
  b13Batches: 20,
  b13Rows: 50_000,
  b13SteadyRows: 2_000,
  b13WindowRows: 15_000,
  b15Completions: 300,
  b16Requests: 200,
  b17Lines: 50_000,
  b17Bytes: 200_000_000,
  b18BacklogBatches: 10,
  b18BacklogRows: 20_000,
  b18HighRows: 500,
  b18ShareRows: 20_000,
  b18ShareStarts: 3_000,
  b18StandardRows: 3_000,
  b18WindowS: 45,
  b18RateRows: 480,
}

export const QUICK: Sizes = {
  trials: 1,
  slots: 64,
  latencyMs: 50,
  b1Rows: 2_000,
  b1Bytes: 1.26 * MiB,
  throughputRows: 2_000,
  b4BigRows: 5_000,
  b4SmallRows: 200,
  b4DelayMs: 1_000,
  b5Pages: 20,
  b5Lists: 20,
  b6Batches: 1,
  b6NatsBatches: 1,
  b6RowsPerBatch: 12_500,
  b7Batches: 12,
  b7Rows: 2_000,
  b7SettleMs: 1_000,
  b12Readers: 200,
  b12PauseMs: 250,
  b13Batches: 20,
  b13Rows: 2_500,
  b13SteadyRows: 200,
  b13WindowRows: 1_500,
  b15Completions: 100,
  b16Requests: 40,
  b17Lines: 2_000,
  b17Bytes: 8_000_000,
  b18BacklogBatches: 10,
  b18BacklogRows: 1_000,
  b18HighRows: 100,
  b18ShareRows: 2_000,
  b18ShareStarts: 600,
  b18StandardRows: 500,
  b18WindowS: 20,
  b18RateRows: 80,
}

export interface Running {
  readonly sluice: Sluice
  readonly api: SluiceApi
  /** What it was started with: another instance on the same log takes the same. */
  readonly models: ReadonlyArray<CatalogEntry>
  readonly natsUrl: string | undefined
  /** Its nats-server's process id, on the NATS log. */
  readonly natsPid: (() => number) | undefined
}

/**
 * The Sluice processes several scenarios share: started before the first scenario, stopped after the last that uses them.
 * `stub` and `stubNats` serve `bench-stub` alone, on the minimal stub upstream, one on each log.
 */
export type SharedSluice = "main" | "nats" | "stub" | "stubNats"

/** Figures one scenario leaves for another measured in the same run. */
export interface Shared {
  /** B1's last batch, left to complete for B5. */
  createdLarge?: { readonly id: string; readonly rows: number }
  /** B2's Sluice rows/s on the embedded log, per trial, for B8's ratio. */
  sluiceRowsPerSecond?: ReadonlyArray<number>
  /** The same on NATS. */
  natsRowsPerSecond?: ReadonlyArray<number>
}

export interface Context {
  readonly quick: boolean
  readonly sizes: Sizes
  readonly shared: Shared
  readonly progress: (line: string) => void
  /** The simulator process with this latency, started once. */
  readonly sim: (latencyMs: number) => Promise<Sim>
  /** The minimal stub upstream process (bench/stubUpstream.ts), started once. */
  readonly stub: () => Promise<Sim>
  /**
   * A shared Sluice, started once. `main`, on the embedded log, serves B1–B5: `bench-fast` on the
   * 0 ms simulator and `bench-slow` on the 50 ms one, `slots` batch slots each. `nats`, on its own
   * nats-server, serves B2's second half: `bench-fast` only.
   */
  readonly sluice: (which: SharedSluice) => Promise<Running>
  /** Stops a shared Sluice (it would be started again if asked for later). */
  readonly release: (which: SharedSluice) => Promise<void>
}

export const makeContext = (quick: boolean, progress: (line: string) => void, trials?: number): Context => {
  const sizes = { ...(quick ? QUICK : FULL), ...(trials === undefined ? {} : { trials }) }
  // Ports are chosen first, so a Sluice can start with its catalog while its simulators start.
  const ports = new Map<number, Promise<number>>()
  const port = (latencyMs: number) => {
    let chosen = ports.get(latencyMs)
    if (chosen === undefined) ports.set(latencyMs, (chosen = freePort()))
    return chosen
  }
  const sims = new Map<number, Promise<Sim>>()
  const sim = (latencyMs: number) => {
    let started = sims.get(latencyMs)
    if (started === undefined) {
      progress(`starting the simulator (${latencyMs} ms)`)
      started = port(latencyMs).then((p) => startSim(latencyMs, p))
      sims.set(latencyMs, started)
    }
    return started
  }
  const stubPort = freePort()
  let stubbed: Promise<Sim> | undefined
  const stub = () => {
    if (stubbed === undefined) {
      progress("starting the stub upstream")
      stubbed = stubPort.then(startStub)
    }
    return stubbed
  }
  const start = async (which: SharedSluice): Promise<Running> => {
    const onStub = which === "stub" || which === "stubNats"
    const fast = { id: MODELS.fast, upstream_url: simUrl(await port(0)), batch_concurrency: sizes.slots }
    const slow = { id: MODELS.slow, upstream_url: simUrl(await port(sizes.latencyMs)), batch_concurrency: sizes.slots }
    const onStubModel = { id: MODELS.stub, upstream_url: simUrl(await stubPort), batch_concurrency: sizes.slots }
    const nats = which === "nats" || which === "stubNats" ? await startNats() : undefined
    progress(`starting Sluice (${nats === undefined ? "embedded" : "NATS"} log${onStub ? ", stub upstream" : ""})`)
    const models = onStub ? [onStubModel] : nats === undefined ? [fast, slow] : [fast]
    const [sluice] = await Promise.all([
      startSluice({ models, ...(nats === undefined ? {} : { natsUrl: nats.url }) }),
      ...(onStub ? [stub()] : [sim(0)]),
      ...(which === "main" ? [sim(sizes.latencyMs)] : []),
    ])
    const api = sluiceApi(sluice.url)
    return {
      api,
      models,
      natsUrl: nats?.url,
      natsPid: nats?.pid,
      sluice: {
        ...sluice,
        stop: async () => {
          api.close()
          await sluice.stop()
          await nats?.stop()
        },
      },
    }
  }
  const running = new Map<SharedSluice, Promise<Running>>()
  return {
    quick,
    sizes,
    shared: {},
    progress,
    sim,
    stub,
    sluice: (which) => {
      let started = running.get(which)
      if (started === undefined) running.set(which, (started = start(which)))
      return started
    },
    release: async (which) => {
      const started = running.get(which)
      running.delete(which)
      if (started !== undefined) await (await started).sluice.stop()
    },
  }
}
