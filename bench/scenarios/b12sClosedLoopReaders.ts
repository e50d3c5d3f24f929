import { batchCost } from "../batchCost.js"
import { mainThreadRunQueueMs } from "../cpuTime.js"
import type { Context, Running } from "../context.js"
import { type Backend, type Figure, atLeast, atMost, figure } from "../figures.js"
import { type LoopDelay, scrapeLoopDelay } from "../loopDelay.js"
import { BENCH_KEY, MODELS, type Readers, type Sim, startReaders } from "../processes.js"
import type { ReadersDone } from "../readers.js"
import { batchBody, smallRows } from "../rows.js"
import type { Scenario } from "../scenario.js"
import { quantile, ratios } from "../stats.js"
import { type AnswerBuckets, answerBuckets, answerQuantileMs } from "../answerTimes.js"

const WARM_ROWS = 1_000

const allLatencies = (done: ReadersDone) => [...done.latencies.batch, ...done.latencies.results, ...done.latencies.list]

/** CPU ms over a span ÷ the span: the cores a process kept busy. */
const cores = (cpuMs: number, seconds: number) => cpuMs / 1000 / seconds

/**
 * Each trial runs B2s's batch alone and then again with the readers in a closed loop, so each ratio pairs
 * neighbours in time; the dispatch loop's delay is read over each of the two runs.
 */
const measure = async (ctx: Context, backend: Backend, running: Running, stub: Sim, readers: Readers): Promise<Array<Figure>> => {
  const { throughputRows: rows, slots, trials, b12Readers } = ctx.sizes
  const { api, sluice } = running
  const body = batchBody(smallRows(rows, MODELS.stub))
  await batchCost(api, batchBody(smallRows(WARM_ROWS, MODELS.stub)), WARM_ROWS, [])
  const f = { alone: [] as Array<number>, read: [] as Array<number>, p99: [] as Array<number>, max: [] as Array<number>, errors: [] as Array<number>, perSecond: [] as Array<number>, ownP99: [] as Array<number> }
  const delay = { alone: [] as Array<LoopDelay>, read: [] as Array<LoopDelay> }
  // The dispatch thread's wait for a core, ms a second of each run: what of B12d is the machine's.
  const waited = { alone: [] as Array<number>, read: [] as Array<number> }
  const cpu = { dispatchAlone: [] as Array<number>, dispatch: [] as Array<number>, sluiceAlone: [] as Array<number>, stubAlone: [] as Array<number>, sluice: [] as Array<number>, readers: [] as Array<number>, stub: [] as Array<number> }
  for (let t = 0; t < trials; t++) {
    let quiet: LoopDelay | undefined
    let waitedFrom = 0
    let waitedAlone = 0
    const alone = await batchCost(api, body, rows, [sluice.pid, stub.pid, { own: sluice.pid }], {
      accepted: async () => {
        await scrapeLoopDelay(sluice.url)
        waitedFrom = mainThreadRunQueueMs(sluice.pid)
      },
      finished: async () => {
        waitedAlone = mainThreadRunQueueMs(sluice.pid) - waitedFrom
        quiet = await scrapeLoopDelay(sluice.url)
      },
    })
    await readers.warm({ baseUrl: sluice.url, key: BENCH_KEY, readers: b12Readers })
    let reading: { readonly stop: () => Promise<ReadersDone> } | undefined
    let busy: LoopDelay | undefined
    let waitedReading = 0
    let answered: AnswerBuckets | undefined
    const read = await batchCost(api, body, rows, [sluice.pid, readers.pid, stub.pid, { own: sluice.pid }], {
      accepted: async (batchId) => {
        await scrapeLoopDelay(sluice.url)
        answered = await answerBuckets(sluice.url)
        waitedFrom = mainThreadRunQueueMs(sluice.pid)
        reading = readers.run({ batchId, pauseMs: 0 })
      },
      finished: async () => {
        waitedReading = mainThreadRunQueueMs(sluice.pid) - waitedFrom
        busy = await scrapeLoopDelay(sluice.url)
      },
    })
    const seen = await reading!.stop()
    f.ownP99.push(answerQuantileMs(answered!, await answerBuckets(sluice.url), 0.99))
    const latencies = allLatencies(seen)
    f.alone.push(alone.rowsPerSecond)
    f.read.push(read.rowsPerSecond)
    f.p99.push(quantile(latencies, 0.99))
    f.max.push(Math.max(...latencies))
    f.errors.push(seen.errors)
    f.perSecond.push(latencies.length / seen.seconds)
    waited.alone.push(waitedAlone / alone.seconds)
    waited.read.push(waitedReading / read.seconds)
    delay.alone.push(quiet!)
    delay.read.push(busy!)
    cpu.sluiceAlone.push(cores(alone.cpuMs[0]!, alone.seconds))
    cpu.stubAlone.push(cores(alone.cpuMs[1]!, alone.seconds))
    cpu.sluice.push(cores(read.cpuMs[0]!, read.seconds))
    cpu.readers.push(cores(read.cpuMs[1]!, read.seconds))
    cpu.stub.push(cores(read.cpuMs[2]!, read.seconds))
    cpu.dispatchAlone.push(cores(alone.cpuMs[2]!, alone.seconds))
    cpu.dispatch.push(cores(read.cpuMs[3]!, read.seconds))
    ctx.progress(
      `B12s ${backend} trial ${t + 1}: ${f.read[t]!.toFixed(0)} rows/s with readers, ${f.alone[t]!.toFixed(0)} without; ` +
        `${latencies.length} reads (${f.perSecond[t]!.toFixed(0)}/s), p99 ${f.p99[t]!.toFixed(1)} ms (Sluice's own answer ≤ ${f.ownP99[t]} ms), max ${f.max[t]!.toFixed(0)} ms, ${seen.errors} errors` +
        (seen.firstError === undefined ? "" : ` (first: ${seen.firstError})`) +
        `; loop delay p99 ${busy!.p99Ms.toFixed(1)} ms with readers, ${quiet!.p99Ms.toFixed(1)} without; ` +
        `dispatch thread waiting for a core ${waited.read[t]!.toFixed(0)} ms a second with readers, ${waited.alone[t]!.toFixed(0)} without; ` +
        `cores with readers: Sluice ${cpu.sluice[t]!.toFixed(2)} (its dispatch process ${cpu.dispatch[t]!.toFixed(2)}), readers ${cpu.readers[t]!.toFixed(2)}, stub ${cpu.stub[t]!.toFixed(2)}; without: Sluice ${cpu.sluiceAlone[t]!.toFixed(2)} (dispatch ${cpu.dispatchAlone[t]!.toFixed(2)}), stub ${cpu.stubAlone[t]!.toFixed(2)}`,
    )
  }
  const scenario = `${b12Readers} closed-loop readers during B2s (${rows.toLocaleString("en")} rows, stub upstream, ${slots} slots)`
  const cpuFigure = (who: string, samples: ReadonlyArray<number>) => figure({ id: "B12s", scenario, backend, figure: `cores used: ${who}`, samples, digits: 2 })
  return [
    figure({ id: "B12s", scenario, backend, figure: "Sluice rows/s without readers", samples: f.alone }),
    figure({ id: "B12s", scenario, backend, figure: "Sluice rows/s with readers", samples: f.read }),
    figure({ id: "B12s", scenario, backend, figure: "rows/s with ÷ without readers", samples: ratios(f.read, f.alone), digits: 2, target: atLeast(0.8) }),
    figure({ id: "B12s", scenario, backend, figure: "reads answered per second", samples: f.perSecond }),
    figure({ id: "B12s", scenario, backend, figure: "reader p99 (ms)", samples: f.p99, digits: 1, target: atMost(50) }),
    figure({ id: "B12s", scenario, backend, figure: "Sluice's own answer p99 (ms, its histogram's bucket bound)", samples: f.ownP99, digits: 1 }),
    figure({ id: "B12s", scenario, backend, figure: "reader max (ms)", samples: f.max, target: atMost(250) }),
    figure({ id: "B12s", scenario, backend, figure: "reader errors", samples: f.errors, target: atMost(0) }),
    cpuFigure("Sluice, with readers", cpu.sluice),
    cpuFigure("Sluice's dispatch process, with readers", cpu.dispatch),
    cpuFigure("readers' process", cpu.readers),
    cpuFigure("stub, with readers", cpu.stub),
    cpuFigure("Sluice, without readers", cpu.sluiceAlone),
    cpuFigure("Sluice's dispatch process, without readers", cpu.dispatchAlone),
    cpuFigure("stub, without readers", cpu.stubAlone),
    figure({ id: "B12d", scenario, backend, figure: "dispatch loop delay p99 (ms), with readers", samples: delay.read.map((d) => d.p99Ms), digits: 1, target: atMost(10) }),
    figure({ id: "B12d", scenario, backend, figure: "dispatch loop delay max (ms), with readers", samples: delay.read.map((d) => d.maxMs) }),
    figure({ id: "B12d", scenario, backend, figure: "dispatch loop delay p99 (ms), without readers", samples: delay.alone.map((d) => d.p99Ms), digits: 1 }),
    figure({ id: "B12d", scenario, backend, figure: "dispatch thread's wait for a core (ms a second, schedstat), with readers", samples: waited.read }),
    figure({ id: "B12d", scenario, backend, figure: "dispatch thread's wait for a core (ms a second, schedstat), without readers", samples: waited.alone }),
  ]
}

export const b12sClosedLoopReaders: Scenario = {
  id: "B12s",
  title: "closed-loop readers during B2s, and the dispatch loop's delay (B12s, B12d)",
  uses: ["stub", "stubNats"],
  run: async (ctx) => {
    const stub = await ctx.stub()
    const readers = await startReaders()
    try {
      const embedded = await measure(ctx, "embedded", await ctx.sluice("stub"), stub, readers)
      const onNats = await measure(ctx, "nats", await ctx.sluice("stubNats"), stub, readers)
      const { b12Readers } = ctx.sizes
      return {
        figures: [...embedded, ...onNats],
        notes: [
          `B12s: issue 29's B12, B12 in a closed loop against B2s's stub upstream (the paced B12 above is unchanged). Each trial runs B2s's batch alone, then the same batch again with ${b12Readers} readers (bench/readers.ts, their own process, one keep-alive socket each, opened before the batch is created) that from the create's answer until \`completed\` is seen send their next read as soon as the last is answered: a third GET /v1/batches/{id}, a third walk its results pages of 100, a third GET /v1/batches?limit=20. ` +
            "Cores used is a process's CPU time (user + system, all threads, /proc) over the batch ÷ the batch's wall time; Sluice's counts its HTTP fronts (SLUICE_HTTP_WORKERS, the processes it starts), its dispatch process's does not; on 2 cores the readers' own process takes a share of them, which bounds the dispatch ratio here whatever Sluice does. nats-server's CPU is not counted.",
          "B12d: the event-loop delay of Sluice's main thread (the one that dispatches) over each of B12s's two runs, from prom-client's default metrics on /metrics: a `monitorEventLoopDelay` histogram (10 ms resolution) that every scrape reads and resets, scraped at the create's answer and again at `completed`. Node records the interval between the histogram's 10 ms ticks, so 10 ms is taken off each figure: an idle loop reads about 1 ms. " +
            "Beside it, how long that thread waited runnable for a core over each run (the second field of /proc/<pid>/task/<pid>/schedstat), in ms a second: a delay the machine's cores make, not the loop's own work.",
        ],
      }
    } finally {
      await readers.close()
    }
  },
}
