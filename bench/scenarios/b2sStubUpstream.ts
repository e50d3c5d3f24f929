import { batchCost } from "../batchCost.js"
import type { Context, Running } from "../context.js"
import { cpuMs } from "../cpuTime.js"
import { type Backend, type Figure, atLeast, atMost, figure } from "../figures.js"
import { MODELS, type PlainClient, type Sim, startPlainClient } from "../processes.js"
import { batchBody, smallRows } from "../rows.js"
import type { Scenario } from "../scenario.js"
import { ratios } from "../stats.js"

/** Rows sent once by each side before the first trial, unmeasured, so no trial pays for a cold JIT or new sockets. */
const WARM_ROWS = 1_000

const usPerRow = (ms: number, rows: number) => (ms * 1000) / rows
const stubCpu = (stub: Sim) => cpuMs(stub.pid)

/** Each trial runs the plain client and then Sluice on the same stub, so each ratio pairs neighbours in time. */
const measure = async (ctx: Context, backend: Backend, running: Running, stub: Sim, plain: PlainClient): Promise<Array<Figure>> => {
  const { throughputRows: rows, slots, trials } = ctx.sizes
  const body = batchBody(smallRows(rows, MODELS.stub))
  const plainRun = { upstreamUrl: stub.url, model: MODELS.stub, concurrency: slots }
  await plain.run({ ...plainRun, rows: WARM_ROWS })
  await batchCost(running.api, batchBody(smallRows(WARM_ROWS, MODELS.stub)), WARM_ROWS, [])
  const plainRate: Array<number> = []
  const sluiceRate: Array<number> = []
  const plainCpu: Array<number> = []
  const sluiceCpu: Array<number> = []
  const stubCpuPlain: Array<number> = []
  const stubCpuSluice: Array<number> = []
  const natsCpu: Array<number> = []
  const mainCpu: Array<number> = []
  for (let t = 0; t < trials; t++) {
    const stub0 = stubCpu(stub)
    const p = await plain.run({ ...plainRun, rows })
    stubCpuPlain.push(usPerRow(stubCpu(stub) - stub0, rows))
    plainRate.push(rows / (p.ms / 1000))
    plainCpu.push(usPerRow(p.cpuMs, rows))
    const natsPid = running.natsPid?.()
    const s = await batchCost(running.api, body, rows, [running.sluice.pid, stub.pid, { main: running.sluice.pid }, ...(natsPid === undefined ? [] : [natsPid])])
    sluiceRate.push(s.rowsPerSecond)
    sluiceCpu.push(usPerRow(s.cpuMs[0]!, rows))
    stubCpuSluice.push(usPerRow(s.cpuMs[1]!, rows))
    mainCpu.push(usPerRow(s.cpuMs[2]!, rows))
    if (natsPid !== undefined) natsCpu.push(usPerRow(s.cpuMs[3]!, rows))
    ctx.progress(
      `B2s ${backend} trial ${t + 1}: Sluice ${sluiceRate[t]!.toFixed(0)} rows/s, ${sluiceCpu[t]!.toFixed(0)} µs CPU a row (main thread ${mainCpu[t]!.toFixed(0)}; stub ${stubCpuSluice[t]!.toFixed(0)}` +
        `${natsPid === undefined ? "" : `, nats-server ${natsCpu[t]!.toFixed(0)}`}); ` +
        `plain client ${plainRate[t]!.toFixed(0)} rows/s, ${plainCpu[t]!.toFixed(0)} µs a row (stub ${stubCpuPlain[t]!.toFixed(0)})`,
    )
  }
  const scenario = `${rows.toLocaleString("en")} rows, stub upstream, ${slots} slots`
  return [
    figure({ id: "B2s", scenario, backend, figure: "Sluice rows/s", samples: sluiceRate }),
    figure({ id: "B2s", scenario, backend: "-", figure: `plain client rows/s, ${slots} in flight (next to the ${backend} trials)`, samples: plainRate }),
    figure({ id: "B2s", scenario, backend, figure: "Sluice ÷ plain client", samples: ratios(sluiceRate, plainRate), digits: 2, target: atLeast(0.5) }),
    figure({ id: "B2c", scenario, backend, figure: "Sluice CPU µs a row (whole process)", samples: sluiceCpu }),
    figure({ id: "B2c", scenario, backend, figure: "of which the main thread's (dispatch, log, projections)", samples: mainCpu }),
    figure({ id: "B2c", scenario, backend: "-", figure: `plain client CPU µs a row (its process, next to the ${backend} trials)`, samples: plainCpu }),
    figure({ id: "B2c", scenario, backend, figure: "Sluice CPU a row ÷ plain client's", samples: ratios(sluiceCpu, plainCpu), digits: 2, target: atMost(2) }),
    figure({ id: "B2c", scenario, backend, figure: "stub CPU µs a row, during Sluice's run", samples: stubCpuSluice }),
    ...(natsCpu.length === 0
      ? []
      : [
          figure({ id: "B2c", scenario, backend, figure: "nats-server CPU µs a row, during Sluice's run", samples: natsCpu }),
          figure({
            id: "B2c",
            scenario,
            backend,
            figure: "Sluice and its nats-server, CPU a row ÷ plain client's",
            samples: ratios(sluiceCpu.map((c, i) => c + natsCpu[i]!), plainCpu),
            digits: 2,
          }),
        ]),
    figure({ id: "B2c", scenario, backend: "-", figure: "stub CPU µs a row, during the plain client's run", samples: stubCpuPlain }),
  ]
}

export const b2sStubUpstream: Scenario = {
  id: "B2s",
  title: "throughput and CPU a row against a minimal stub upstream (B2s, B2c)",
  uses: ["stub", "stubNats"],
  run: async (ctx) => {
    const stub = await ctx.stub()
    const plain = await startPlainClient()
    try {
      const embedded = await measure(ctx, "embedded", await ctx.sluice("stub"), stub, plain)
      const onNats = await measure(ctx, "nats", await ctx.sluice("stubNats"), stub, plain)
      return {
        figures: [...embedded, ...onNats],
        notes: [
          `B2s, B2c: B2 against a minimal stub upstream (bench/stubUpstream.ts: node:http, keep-alive, every chat completion answered at once with one fixed body of about 250 bytes), so the upstream's own cost is not in the ratio. ` +
            `Each trial sends the ${ctx.sizes.throughputRows.toLocaleString("en")} row bodies with the plain client (as in B2, ${ctx.sizes.slots} in flight, answers parsed) in a node process of its own, then creates them as one batch on a Sluice whose only model is on the stub; each log has its own Sluice process, the NATS one its own nats-server. ` +
            `CPU is user + system time from /proc of the whole process (all threads, the HTTP fronts' processes included), and of Sluice's main thread alone (the one that decides, appends and projects; the rest is the upstream thread's HTTP, V8's collector and compiler threads, and the fronts): Sluice's from the create's answer to \`completed\` seen by polling every 25 ms (the polls included), the plain client's over its calls alone, the stub's over each side's run. ` +
            `CPU a row is the figure that holds when the machine is slow or shared (a ratio of rows/s moves with it); on the NATS log, nats-server's CPU over Sluice's run is a figure of its own, and Sluice's with it beside the plain client's (the ratio with the target counts Sluice's process alone). Before the first trial each side sends ${WARM_ROWS.toLocaleString("en")} rows unmeasured.`,
        ],
      }
    } finally {
      await plain.close()
    }
  },
}
