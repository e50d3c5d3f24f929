import type { Context } from "../context.js"
import { type Backend, type Figure, atLeast, figure } from "../figures.js"
import { runPlainClient } from "../plainClient.js"
import { MODELS } from "../processes.js"
import { sluiceRowsPerSecond } from "../rowsPerSecond.js"
import { batchBody, smallRows, upstreamBodies } from "../rows.js"
import type { Scenario } from "../scenario.js"
import type { SluiceApi } from "../sluiceApi.js"
import { ratios } from "../stats.js"

/** Each trial runs the plain client and then Sluice on the same simulator, so each ratio pairs neighbours in time. */
const measure = async (ctx: Context, backend: Backend, api: SluiceApi, upstreamUrl: string): Promise<Array<Figure>> => {
  const { throughputRows: rows, slots, trials } = ctx.sizes
  const batch = smallRows(rows, MODELS.fast)
  const body = batchBody(batch)
  const bodies = upstreamBodies(batch)
  const plain: Array<number> = []
  const sluice: Array<number> = []
  for (let t = 0; t < trials; t++) {
    plain.push(rows / ((await runPlainClient(upstreamUrl, bodies, slots)) / 1000))
    sluice.push(await sluiceRowsPerSecond(api, body, rows))
    ctx.progress(`B2 ${backend} trial ${t + 1}: Sluice ${sluice[t]!.toFixed(0)} rows/s, plain client ${plain[t]!.toFixed(0)} rows/s`)
  }
  if (backend === "embedded") ctx.shared.sluiceRowsPerSecond = sluice
  else ctx.shared.natsRowsPerSecond = sluice
  const scenario = `${rows.toLocaleString("en")} rows, sim 0 ms, ${slots} slots`
  return [
    figure({ id: "B2", scenario, backend, figure: "Sluice rows/s", samples: sluice }),
    figure({ id: "B2", scenario, backend: "-", figure: `plain client rows/s, ${slots} in flight (next to the ${backend} trials)`, samples: plain }),
    figure({ id: "B2", scenario, backend, figure: "Sluice ÷ plain client", samples: ratios(sluice, plain), digits: 2, target: atLeast(0.5) }),
  ]
}

export const b2Throughput: Scenario = {
  id: "B2",
  title: "throughput against a 0 ms upstream",
  uses: ["main", "nats"],
  run: async (ctx) => {
    const sim = await ctx.sim(0)
    const embedded = await measure(ctx, "embedded", (await ctx.sluice("main")).api, sim.url)
    const onNats = await measure(ctx, "nats", (await ctx.sluice("nats")).api, sim.url)
    return {
      figures: [...embedded, ...onNats],
      notes: [
        `B2: each trial sends the ${ctx.sizes.throughputRows.toLocaleString("en")} row bodies with the plain client (node:http keep-alive, ${ctx.sizes.slots} in flight, answers parsed), then creates them as one batch; Sluice's rows/s run from the create's answer to \`completed\` seen by polling every 25 ms; each backend has its own Sluice process, the nats one its own nats-server.`,
      ],
    }
  },
}
