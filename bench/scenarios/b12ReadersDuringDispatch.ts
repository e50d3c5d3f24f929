import type { Context } from "../context.js"
import { type Backend, type Figure, atLeast, atMost, figure } from "../figures.js"
import { BENCH_KEY, MODELS, type Readers, startReaders, startSluice } from "../processes.js"
import type { ReadersDone } from "../readers.js"
import { sluiceRowsPerSecond } from "../rowsPerSecond.js"
import { batchBody, smallRows } from "../rows.js"
import type { Scenario } from "../scenario.js"
import type { SluiceApi } from "../sluiceApi.js"
import { quantile, ratios } from "../stats.js"
import { answerBuckets, answerQuantileMs } from "../answerTimes.js"

const allLatencies = (done: ReadersDone) => [...done.latencies.batch, ...done.latencies.results, ...done.latencies.list]

/** Each trial runs B2's batch alone and then again with the readers polling it, so each ratio pairs neighbours in time. */
const measure = async (ctx: Context, backend: Backend, api: SluiceApi, baseUrl: string, readers: Readers, where = ""): Promise<Array<Figure>> => {
  const { throughputRows: rows, slots, trials, b12Readers, b12PauseMs } = ctx.sizes
  const body = batchBody(smallRows(rows, MODELS.fast))
  const alone: Array<number> = []
  const read: Array<number> = []
  const p99: Array<number> = []
  const max: Array<number> = []
  const errors: Array<number> = []
  const perSecond: Array<number> = []
  const ownP99: Array<number> = []
  for (let t = 0; t < trials; t++) {
    alone.push(await sluiceRowsPerSecond(api, body, rows))
    await readers.warm({ baseUrl, key: BENCH_KEY, readers: b12Readers })
    const created = await api.create(body)
    const answered = await answerBuckets(baseUrl)
    const running = readers.run({ batchId: created.id, pauseMs: b12PauseMs })
    const done = await api.waitFinal(created.id, 25)
    const seen = await running.stop()
    ownP99.push(answerQuantileMs(answered, await answerBuckets(baseUrl), 0.99))
    if (done.batch.status !== "completed" || done.batch.request_counts.completed !== rows) {
      throw new Error(`batch ${created.id} ended ${done.batch.status} with ${JSON.stringify(done.batch.request_counts)}`)
    }
    read.push(rows / ((done.at - created.acceptedAt) / 1000))
    const latencies = allLatencies(seen)
    p99.push(quantile(latencies, 0.99))
    max.push(Math.max(...latencies))
    errors.push(seen.errors)
    perSecond.push(latencies.length / seen.seconds)
    ctx.progress(
      `B12 ${backend}${where} trial ${t + 1}: ${read[t]!.toFixed(0)} rows/s with readers, ${alone[t]!.toFixed(0)} without; ` +
        `${latencies.length} reads (${perSecond[t]!.toFixed(0)}/s), p99 ${p99[t]!.toFixed(1)} ms (Sluice's own answer ≤ ${ownP99[t]} ms), max ${max[t]!.toFixed(0)} ms, ${seen.errors} errors` +
        (seen.firstError === undefined ? "" : ` (first: ${seen.firstError})`),
    )
  }
  const scenario = `${b12Readers} readers during B2 (${rows.toLocaleString("en")} rows, sim 0 ms, ${slots} slots)${where}`
  return [
    figure({ id: "B12", scenario, backend, figure: "Sluice rows/s without readers", samples: alone }),
    figure({ id: "B12", scenario, backend, figure: "Sluice rows/s with readers", samples: read }),
    figure({ id: "B12", scenario, backend, figure: "rows/s with ÷ without readers", samples: ratios(read, alone), digits: 2, target: atLeast(0.8) }),
    figure({ id: "B12", scenario, backend, figure: "reads answered per second", samples: perSecond }),
    figure({ id: "B12", scenario, backend, figure: "reader p99 (ms)", samples: p99, digits: 1, target: atMost(50) }),
    figure({ id: "B12", scenario, backend, figure: "Sluice's own answer p99 (ms, its histogram's bucket bound)", samples: ownP99, digits: 1 }),
    figure({ id: "B12", scenario, backend, figure: "reader max (ms)", samples: max, target: atMost(500) }),
    figure({ id: "B12", scenario, backend, figure: "reader errors", samples: errors, target: atMost(0) }),
  ]
}

export const b12ReadersDuringDispatch: Scenario = {
  id: "B12",
  title: "concurrent readers during a B2 run",
  uses: ["main", "nats"],
  run: async (ctx) => {
    const readers = await startReaders()
    try {
      const main = await ctx.sluice("main")
      const embedded = await measure(ctx, "embedded", main.api, main.sluice.url, readers)
      const nats = await ctx.sluice("nats")
      const onNats = await measure(ctx, "nats", nats.api, nats.sluice.url, readers)
      // The same, the readers on a second instance that runs no models (a read replica) on the same log.
      const replica = await startSluice({ models: nats.models, natsUrl: nats.natsUrl!, env: { SLUICE_RUN_MODELS: "false", SLUICE_INSTANCE_ID: "bench-replica" } })
      let onReplica: Array<Figure>
      try {
        onReplica = await measure(ctx, "nats", nats.api, replica.url, readers, ", readers on a replica")
      } finally {
        await replica.stop()
      }
      const { b12Readers, b12PauseMs } = ctx.sizes
      return {
        figures: [...embedded, ...onNats, ...onReplica],
        notes: [
          `B12: each trial runs B2's batch alone, then the same batch again with ${b12Readers} readers polling from the moment it is accepted until \`completed\` is seen: a third GET /v1/batches/{id} of the running batch, a third walk its GET /v1/batches/{id}/results?limit=100 pages from the first (following last_id, again from the start when has_more is false), a third GET /v1/batches?limit=20; each reader waits ${b12PauseMs} ms after each answer. ` +
            "The readers run in their own node process (bench/readers.ts, one keep-alive socket per reader, each opened before the batch is created and not timed), not in the bench driver: on 2 cores a driver that both polls for completion and issues hundreds of reads a second would delay its own completion check and time its reads' queueing on its own event loop, not Sluice's. That process still shares the 2 cores with Sluice and the simulator. Latency is from sending a request to its whole answer; an error is a failed request or an answer ≥ 400. Sluice's own answer p99 is from its request histogram (sluice_http_request_duration_seconds, the polled reads' routes with status 200, which the fronts report to; the bench's own polls for completion included): from the request parsed by the process that answers it to the answer written, as the smallest bucket bound holding 99 % of them; the readers' p99 adds the time a request waited to be read (behind other connections' requests in that process's loop, or for a core) and the readers' own process's queueing. " +
            "The third set puts the readers on a second Sluice process on the same nats-server with SLUICE_RUN_MODELS=false (a read replica: it takes no lease, so its event loop does no dispatch); the batch is created and waited for through the owner, and each replica read waits for the replica's read model to reach the last message a call wrote, as every read on NATS does.",
        ],
      }
    } finally {
      await readers.close()
    }
  },
}
