import { join } from "node:path"
import Database from "better-sqlite3"
import { linkHash } from "../../src/eventlog/eventHeaders.js"
import type { Context } from "../context.js"
import { type Backend, type Figure, atLeast, atMost, figure } from "../figures.js"
import { cpuMs } from "../cpuTime.js"
import { MODELS, type Sluice, startNats, startSluice } from "../processes.js"
import { sluiceRowsPerSecond } from "../rowsPerSecond.js"
import { batchBody, sizedRows, smallRows } from "../rows.js"
import type { Scenario } from "../scenario.js"
import { type SluiceApi, sluiceApi } from "../sluiceApi.js"
import { ratios } from "../stats.js"

interface Side {
  readonly api: SluiceApi
  readonly pid: number
  readonly dataDir: string
}

interface Pair {
  readonly chained: Side
  readonly unchained: Side
  readonly stop: () => Promise<void>
}

/** Two Sluice processes alike but for the bench-only switch that turns the hash chain off; on NATS each has its own server. */
const startPair = async (ctx: Context, backend: Backend): Promise<Pair> => {
  const sim = await ctx.sim(0)
  const models = [{ id: MODELS.fast, upstream_url: sim.url, batch_concurrency: ctx.sizes.slots }]
  const one = async (withoutChain: boolean): Promise<{ api: SluiceApi; sluice: Sluice; stopNats: () => Promise<void> }> => {
    const nats = backend === "nats" ? await startNats() : undefined
    const sluice = await startSluice({ models, withoutChain, ...(nats === undefined ? {} : { natsUrl: nats.url }) })
    return { api: sluiceApi(sluice.url), sluice, stopNats: async () => await nats?.stop() }
  }
  const [chained, unchained] = [await one(false), await one(true)]
  return {
    chained: { api: chained.api, pid: chained.sluice.pid, dataDir: chained.sluice.dataDir },
    unchained: { api: unchained.api, pid: unchained.sluice.pid, dataDir: unchained.sluice.dataDir },
    stop: async () => {
      for (const p of [chained, unchained]) {
        p.api.close()
        await p.sluice.stop()
        await p.stopNats()
      }
    },
  }
}

interface Sample {
  readonly value: number
  /** The Sluice process's CPU time (user + system) over the same run, in ms. */
  readonly cpuMs: number
}

/** Trials in turns, the first of each pair alternating, so that neither side always runs on the warmer machine. */
const inTurns = async (
  trials: number,
  pair: Pair,
  run: (side: Side, on: boolean, trial: number) => Promise<{ readonly value: number; readonly after?: () => Promise<unknown> }>,
) => {
  const chained: Array<Sample> = []
  const unchained: Array<Sample> = []
  for (let t = 0; t < trials; t++) {
    for (const on of t % 2 === 0 ? [true, false] : [false, true]) {
      const side = on ? pair.chained : pair.unchained
      const before = cpuMs(side.pid)
      const { value, after } = await run(side, on, t)
      ;(on ? chained : unchained).push({ value, cpuMs: cpuMs(side.pid) - before })
      await after?.()
    }
  }
  return { chained, unchained }
}

const values = (samples: ReadonlyArray<Sample>) => samples.map((s) => s.value)

const createCost = async (ctx: Context, pair: Pair): Promise<Array<Figure>> => {
  const { b1Rows, b1Bytes, trials } = ctx.sizes
  const body = Buffer.from(batchBody(sizedRows(b1Rows, MODELS.fast, b1Bytes)))
  const { chained, unchained } = await inTurns(trials, pair, async (side, on, t) => {
    const created = await side.api.create(body)
    const ms = created.acceptedAt - created.sentAt
    ctx.progress(`B11 create trial ${t + 1}, chain ${on ? "on" : "off"}: ${ms.toFixed(0)} ms`)
    return { value: ms, after: () => side.api.discard(created.id) }
  })
  const scenario = `B1's create, ${b1Rows.toLocaleString("en")} rows, ${(body.length / 2 ** 20).toFixed(1)} MiB`
  const cpu = (samples: ReadonlyArray<Sample>) => samples.map((s) => s.cpuMs)
  return [
    figure({ id: "B11", scenario, backend: "embedded", figure: "create latency with the chain (ms)", samples: values(chained) }),
    figure({ id: "B11", scenario, backend: "embedded", figure: "create latency without the chain (ms)", samples: values(unchained) }),
    figure({ id: "B11", scenario, backend: "embedded", figure: "create with ÷ without the chain", samples: ratios(values(chained), values(unchained)), digits: 3, target: atMost(1.05) }),
    figure({ id: "B11", scenario, backend: "embedded", figure: "Sluice CPU of the create with ÷ without the chain", samples: ratios(cpu(chained), cpu(unchained)), digits: 3, target: atMost(1.05) }),
  ]
}

const throughputCost = async (ctx: Context, backend: Backend, pair: Pair): Promise<Array<Figure>> => {
  // The row bodies' own event is hashed too, but B2's bodies are a few bytes a row: left out of hashingShare alike.
  const { throughputRows: rows, slots, trials } = ctx.sizes
  const body = batchBody(smallRows(rows, MODELS.fast))
  const { chained, unchained } = await inTurns(trials, pair, async (side, on, t) => {
    const perSecond = await sluiceRowsPerSecond(side.api, body, rows)
    ctx.progress(`B11 ${backend} throughput trial ${t + 1}, chain ${on ? "on" : "off"}: ${perSecond.toFixed(0)} rows/s`)
    return { value: perSecond }
  })
  const cpuPerRow = (samples: ReadonlyArray<Sample>) => samples.map((s) => (s.cpuMs * 1000) / rows)
  const scenario = `B2's ${rows.toLocaleString("en")} rows, sim 0 ms, ${slots} slots`
  return [
    figure({ id: "B11", scenario, backend, figure: "rows/s with the chain", samples: values(chained) }),
    figure({ id: "B11", scenario, backend, figure: "rows/s without the chain", samples: values(unchained) }),
    figure({ id: "B11", scenario, backend, figure: "rows/s with ÷ without the chain", samples: ratios(values(chained), values(unchained)), digits: 3, target: atLeast(0.95) }),
    figure({ id: "B11", scenario, backend, figure: "Sluice CPU µs a row with the chain", samples: cpuPerRow(chained) }),
    figure({ id: "B11", scenario, backend, figure: "Sluice CPU µs a row without the chain", samples: cpuPerRow(unchained) }),
    figure({ id: "B11", scenario, backend, figure: "Sluice CPU µs a row with ÷ without the chain", samples: ratios(cpuPerRow(chained), cpuPerRow(unchained)), digits: 3, target: atMost(1.05) }),
    ...(backend === "embedded" ? hashingShare(ctx, pair, rows, cpuPerRow(chained)) : []),
  ]
}

/**
 * The chain's own work, apart from everything else that moves a process's CPU time: this process
 * hashes every batch message the chained Sluice stored in the throughput trials, as the stamper does,
 * and the time a row is set beside that Sluice's CPU time a row. The headers' bytes are not in it.
 */
const hashingShare = (ctx: Context, pair: Pair, rows: number, sluiceCpuPerRowUs: ReadonlyArray<number>): Array<Figure> => {
  const db = new Database(join(pair.chained.dataDir, "log.sqlite"), { readonly: true })
  const stored = db.prepare("SELECT subject, data FROM messages WHERE subject LIKE 'batch.%'").all() as Array<{ subject: string; data: Buffer }>
  db.close()
  const prev = "0".repeat(64)
  const perRow: Array<number> = []
  for (let t = 0; t < 5; t++) {
    const t0 = performance.now()
    for (const m of stored) linkHash(prev, m.subject, m.data)
    perRow.push(((performance.now() - t0) * 1000) / (rows * ctx.sizes.trials))
  }
  const scenario = `B2's ${rows.toLocaleString("en")} rows: every batch message stored, hashed`
  const median = [...sluiceCpuPerRowUs].sort((a, b) => a - b)[Math.floor(sluiceCpuPerRowUs.length / 2)]!
  return [
    figure({ id: "B11", scenario, backend: "embedded", figure: "chain hashing µs a row (the benchmark's process)", samples: perRow, digits: 2 }),
    figure({ id: "B11", scenario, backend: "embedded", figure: "÷ Sluice CPU µs a row with the chain (median)", samples: perRow.map((us) => us / median), digits: 4, target: atMost(0.05) }),
  ]
}

export const b11ChainCost: Scenario = {
  id: "B11",
  title: "the cost of the hash chain: B1's create and B2's throughput with and without it",
  uses: [],
  run: async (ctx) => {
    const figures: Array<Figure> = []
    const embedded = await startPair(ctx, "embedded")
    try {
      figures.push(...(await createCost(ctx, embedded)), ...(await throughputCost(ctx, "embedded", embedded)))
    } finally {
      await embedded.stop()
    }
    const nats = await startPair(ctx, "nats")
    try {
      figures.push(...(await throughputCost(ctx, "nats", nats)))
    } finally {
      await nats.stop()
    }
    return {
      figures,
      notes: [
        "B11: two Sluice processes alike but for the bench-only SLUICE_BENCH_WITHOUT_CHAIN=1 on one (no Sluice-Sha256 / Sluice-Prev-Sha256 headers, so no hashing and no chain lookups), each on its own data directory (and, on NATS, its own nats-server); trials alternate between them, the first of each pair switching sides, and each ratio pairs the two of one trial. The create is B1's (each batch cancelled and deleted after, outside the time and CPU measured), the throughput B2's. The CPU is the Sluice process's user + system time over the same create or batch (/proc, 10 ms ticks), which the other work on a shared machine moves less than the wall-clock figures.",
      ],
    }
  },
}
