import { batchCost } from "../batchCost.js"
import type { Context, Running } from "../context.js"
import { ownCpuMs } from "../cpuTime.js"
import { type Backend, type Figure, atLeast, atMost, figure } from "../figures.js"
import { runPlainClient } from "../plainClient.js"
import { MODELS, type Sim } from "../processes.js"
import { batchBody, smallRows, upstreamBodies } from "../rows.js"
import type { Scenario } from "../scenario.js"
import { ratios } from "../stats.js"

const usPerRow = (ms: number, rows: number) => (ms * 1000) / rows

/** Each trial runs the plain client and then Sluice on the same simulator, so each ratio pairs neighbours in time. */
const measure = async (ctx: Context, backend: Backend, running: Running, sim: Sim): Promise<Array<Figure>> => {
  const { throughputRows: rows, slots, trials } = ctx.sizes
  const batch = smallRows(rows, MODELS.fast)
  const body = batchBody(batch)
  const bodies = upstreamBodies(batch)
  const plain: Array<number> = []
  const sluice: Array<number> = []
  const plainCpu: Array<number> = []
  const sluiceCpu: Array<number> = []
  const simCpu: Array<number> = []
  for (let t = 0; t < trials; t++) {
    // The plain client runs in this process, which does nothing else meanwhile: its CPU is the plain client's.
    const cpu0 = ownCpuMs(process.pid)
    plain.push(rows / ((await runPlainClient(sim.url, bodies, slots)) / 1000))
    plainCpu.push(usPerRow(ownCpuMs(process.pid) - cpu0, rows))
    const cost = await batchCost(running.api, body, rows, [running.sluice.pid, sim.pid])
    sluice.push(cost.rowsPerSecond)
    sluiceCpu.push(usPerRow(cost.cpuMs[0]!, rows))
    simCpu.push(usPerRow(cost.cpuMs[1]!, rows))
    ctx.progress(
      `B2 ${backend} trial ${t + 1}: Sluice ${sluice[t]!.toFixed(0)} rows/s, ${sluiceCpu[t]!.toFixed(0)} µs CPU a row (simulator ${simCpu[t]!.toFixed(0)}); ` +
        `plain client ${plain[t]!.toFixed(0)} rows/s, ${plainCpu[t]!.toFixed(0)} µs a row`,
    )
  }
  if (backend === "embedded") ctx.shared.sluiceRowsPerSecond = sluice
  else ctx.shared.natsRowsPerSecond = sluice
  const scenario = `${rows.toLocaleString("en")} rows, sim 0 ms, ${slots} slots`
  return [
    figure({ id: "B2", scenario, backend, figure: "Sluice rows/s", samples: sluice }),
    figure({ id: "B2", scenario, backend: "-", figure: `plain client rows/s, ${slots} in flight (next to the ${backend} trials)`, samples: plain }),
    figure({ id: "B2", scenario, backend, figure: "Sluice ÷ plain client", samples: ratios(sluice, plain), digits: 2, target: atLeast(0.5) }),
    figure({ id: "B2c", scenario, backend, figure: "Sluice CPU µs a row (whole process)", samples: sluiceCpu }),
    figure({ id: "B2c", scenario, backend: "-", figure: `plain client CPU µs a row (next to the ${backend} trials)`, samples: plainCpu }),
    figure({ id: "B2c", scenario, backend, figure: "Sluice CPU a row ÷ plain client's", samples: ratios(sluiceCpu, plainCpu), digits: 2, target: atMost(2) }),
    figure({ id: "B2c", scenario, backend, figure: "simulator CPU µs a row, during Sluice's run", samples: simCpu }),
  ]
}

export const b2Throughput: Scenario = {
  id: "B2",
  title: "throughput against a 0 ms upstream",
  uses: ["main", "nats"],
  run: async (ctx) => {
    const sim = await ctx.sim(0)
    const embedded = await measure(ctx, "embedded", await ctx.sluice("main"), sim)
    const onNats = await measure(ctx, "nats", await ctx.sluice("nats"), sim)
    return {
      figures: [...embedded, ...onNats],
      notes: [
        `B2: each trial sends the ${ctx.sizes.throughputRows.toLocaleString("en")} row bodies with the plain client (node:http keep-alive, ${ctx.sizes.slots} in flight, answers parsed), then creates them as one batch; Sluice's rows/s run from the create's answer to \`completed\` seen by polling every 25 ms; each backend has its own Sluice process, the nats one its own nats-server. ` +
          "B2c's rows here are CPU time from /proc as in B2s, the plain client's being this bench process's over its calls (it does nothing else meanwhile); the simulator's cost is in neither side's figure but is beside them.",
      ],
    }
  },
}
