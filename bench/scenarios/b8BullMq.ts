import { createConnection } from "node:net"
import { Queue, Worker } from "bullmq"
import { atLeast, figure } from "../figures.js"
import { keepAliveAgent } from "../http.js"
import { postChat } from "../plainClient.js"
import { MODELS } from "../processes.js"
import { smallRows } from "../rows.js"
import type { Scenario } from "../scenario.js"
import { ratios } from "../stats.js"

const REDIS = { host: "127.0.0.1", port: 6379 }

/** Whether a Redis server answers PING on 127.0.0.1:6379 within a second. */
const redisAnswers = (): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = createConnection(REDIS)
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1_000, () => done(false))
    socket.once("error", () => done(false))
    socket.once("connect", () => socket.write("PING\r\n"))
    socket.once("data", (chunk: Buffer) => done(chunk.toString().startsWith("+PONG")))
  })

/** One trial: every row as a job (one addBulk), workers with `concurrency` calling the simulator; rows/s from the first add to the last completion. */
const bullMqTrial = async (upstreamUrl: string, rows: ReadonlyArray<object>, concurrency: number, trial: number): Promise<number> => {
  const name = `sluice-bench-${process.pid}-${Date.now()}-${trial}`
  const agent = keepAliveAgent(concurrency * 2)
  const queue = new Queue(name, { connection: REDIS })
  const worker = new Worker(name, (job) => postChat(agent, upstreamUrl, JSON.stringify(job.data)), { connection: REDIS, concurrency })
  try {
    await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()])
    let completed = 0
    const finished = new Promise<void>((resolve, reject) => {
      worker.on("completed", () => ++completed === rows.length && resolve())
      worker.on("failed", (_job, error) => reject(error))
      worker.on("error", reject)
    })
    const t0 = performance.now()
    await queue.addBulk(rows.map((data) => ({ name: "row", data })))
    await finished
    return rows.length / ((performance.now() - t0) / 1000)
  } finally {
    await worker.close()
    await queue.obliterate({ force: true })
    await queue.close()
    agent.destroy()
  }
}

export const b8BullMq: Scenario = {
  id: "B8",
  title: "the same workload through BullMQ on Redis",
  uses: [],
  requires: ["B2"],
  skipReason: async () => ((await redisAnswers()) ? undefined : "no Redis on 127.0.0.1:6379"),
  run: async (ctx) => {
    const { throughputRows: rows, slots, trials } = ctx.sizes
    const sluice = ctx.shared.sluiceRowsPerSecond
    if (sluice === undefined) throw new Error("B8 compares with B2's embedded Sluice trials, and B2 left none")
    const nats = ctx.shared.natsRowsPerSecond
    const sim = await ctx.sim(0)
    const bodies = smallRows(rows, MODELS.fast).map((r) => r.body)
    const bull: Array<number> = []
    for (let t = 0; t < trials; t++) {
      bull.push(await bullMqTrial(sim.url, bodies, slots, t))
      ctx.progress(`B8 trial ${t + 1}: BullMQ ${bull[t]!.toFixed(0)} rows/s`)
    }
    const scenario = `B2's ${rows.toLocaleString("en")} rows via BullMQ, ${slots} concurrent workers`
    return {
      figures: [
        figure({ id: "B8", scenario, backend: "-", figure: "BullMQ rows/s", samples: bull }),
        figure({ id: "B8", scenario, backend: "embedded", figure: "Sluice (B2) ÷ BullMQ", samples: ratios(sluice, bull), digits: 2, target: atLeast(1) }),
        ...(nats === undefined
          ? []
          : [figure({ id: "B8", scenario, backend: "nats", figure: "Sluice (B2) ÷ BullMQ", samples: ratios(nats, bull), digits: 2, target: atLeast(1) })]),
      ],
      notes: [
        `B8: Queue.addBulk of every row's body, then a Worker with concurrency ${slots} posting each to the same 0 ms simulator through the same keep-alive node:http client as the plain client, default job options (completed jobs and their results kept in Redis); a fresh queue per trial, obliterated after; Redis client: ioredis; the ratios pair each BullMQ trial with the B2 Sluice trial of the same number, on each log.`,
      ],
    }
  },
}
