import { atLeast, figure } from "../figures.js"
import { MODELS } from "../processes.js"
import { sluiceRowsPerSecond } from "../rowsPerSecond.js"
import { batchBody, smallRows } from "../rows.js"
import type { Scenario } from "../scenario.js"

export const b3Utilization: Scenario = {
  id: "B3",
  title: "slot utilization against a 50 ms upstream",
  uses: ["main"],
  run: async (ctx) => {
    const { throughputRows: rows, slots, latencyMs, trials } = ctx.sizes
    const { api } = await ctx.sluice("main")
    const body = batchBody(smallRows(rows, MODELS.slow))
    const ideal = slots / (latencyMs / 1000)
    const achieved: Array<number> = []
    for (let t = 0; t < trials; t++) {
      achieved.push(await sluiceRowsPerSecond(api, body, rows))
      ctx.progress(`B3 trial ${t + 1}: ${achieved[t]!.toFixed(0)} rows/s of ${ideal.toFixed(0)}`)
    }
    const scenario = `${rows.toLocaleString("en")} rows, sim ${latencyMs} ms, ${slots} slots`
    return {
      figures: [
        figure({ id: "B3", scenario, backend: "embedded", figure: "Sluice rows/s", samples: achieved }),
        figure({ id: "B3", scenario, backend: "embedded", figure: `utilization: rows/s ÷ (${slots} slots ÷ ${latencyMs} ms)`, samples: achieved.map((r) => r / ideal), digits: 3, target: atLeast(0.97) }),
      ],
      notes: [
        `B3: rows/s from the create's answer to \`completed\` seen by polling every 25 ms, against the ${ideal.toFixed(0)} rows/s that ${slots} slots busy all the time would give at ${latencyMs} ms each.`,
      ],
    }
  },
}
