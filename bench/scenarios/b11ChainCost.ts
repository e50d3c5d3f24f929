import type { Context } from "../context.js"
import { type Backend, type Figure, atLeast, atMost, figure } from "../figures.js"
import { MODELS, type Sluice, startNats, startSluice } from "../processes.js"
import { sluiceRowsPerSecond } from "../rowsPerSecond.js"
import { batchBody, sizedRows, smallRows } from "../rows.js"
import type { Scenario } from "../scenario.js"
import { type SluiceApi, sluiceApi } from "../sluiceApi.js"
import { ratios } from "../stats.js"

interface Pair {
  readonly chained: SluiceApi
  readonly unchained: SluiceApi
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
    chained: chained.api,
    unchained: unchained.api,
    stop: async () => {
      for (const p of [chained, unchained]) {
        p.api.close()
        await p.sluice.stop()
        await p.stopNats()
      }
    },
  }
}

/** Trials in turns, the first of each pair alternating, so that neither side always runs on the warmer machine. */
const inTurns = async (trials: number, run: (chained: boolean, trial: number) => Promise<number>) => {
  const chained: Array<number> = []
  const unchained: Array<number> = []
  for (let t = 0; t < trials; t++) {
    for (const on of t % 2 === 0 ? [true, false] : [false, true]) (on ? chained : unchained).push(await run(on, t))
  }
  return { chained, unchained }
}

const createCost = async (ctx: Context, pair: Pair): Promise<Array<Figure>> => {
  const { b1Rows, b1Bytes, trials } = ctx.sizes
  const body = Buffer.from(batchBody(sizedRows(b1Rows, MODELS.fast, b1Bytes)))
  const { chained, unchained } = await inTurns(trials, async (on, t) => {
    const api = on ? pair.chained : pair.unchained
    const created = await api.create(body)
    const ms = created.acceptedAt - created.sentAt
    await api.discard(created.id)
    ctx.progress(`B11 create trial ${t + 1}, chain ${on ? "on" : "off"}: ${ms.toFixed(0)} ms`)
    return ms
  })
  const scenario = `B1's create, ${b1Rows.toLocaleString("en")} rows, ${(body.length / 2 ** 20).toFixed(1)} MiB`
  return [
    figure({ id: "B11", scenario, backend: "embedded", figure: "create latency with the chain (ms)", samples: chained }),
    figure({ id: "B11", scenario, backend: "embedded", figure: "create latency without the chain (ms)", samples: unchained }),
    figure({ id: "B11", scenario, backend: "embedded", figure: "create with ÷ without the chain", samples: ratios(chained, unchained), digits: 3, target: atMost(1.05) }),
  ]
}

const throughputCost = async (ctx: Context, backend: Backend, pair: Pair): Promise<Array<Figure>> => {
  const { throughputRows: rows, slots, trials } = ctx.sizes
  const body = batchBody(smallRows(rows, MODELS.fast))
  const { chained, unchained } = await inTurns(trials, async (on, t) => {
    const perSecond = await sluiceRowsPerSecond(on ? pair.chained : pair.unchained, body, rows)
    ctx.progress(`B11 ${backend} throughput trial ${t + 1}, chain ${on ? "on" : "off"}: ${perSecond.toFixed(0)} rows/s`)
    return perSecond
  })
  const scenario = `B2's ${rows.toLocaleString("en")} rows, sim 0 ms, ${slots} slots`
  return [
    figure({ id: "B11", scenario, backend, figure: "rows/s with the chain", samples: chained }),
    figure({ id: "B11", scenario, backend, figure: "rows/s without the chain", samples: unchained }),
    figure({ id: "B11", scenario, backend, figure: "rows/s with ÷ without the chain", samples: ratios(chained, unchained), digits: 3, target: atLeast(0.95) }),
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
        "B11: two Sluice processes alike but for the bench-only SLUICE_BENCH_WITHOUT_CHAIN=1 on one (no Sluice-Sha256 / Sluice-Prev-Sha256 headers, so no hashing and no chain lookups), each on its own data directory (and, on NATS, its own nats-server); trials alternate between them, the first of each pair switching sides, and each ratio pairs the two of one trial. The create is B1's (each batch cancelled and deleted after), the throughput B2's.",
      ],
    }
  },
}
