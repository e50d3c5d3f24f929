import { mulberry32 } from "../../src/sim/Prng.js"
import { atLeast, atMost, figure } from "../figures.js"
import type { Scenario } from "../scenario.js"
import { quantile } from "../stats.js"

const PAGE = 1000

const timed = async <A>(f: () => Promise<A>): Promise<[number, A]> => {
  const t0 = performance.now()
  const a = await f()
  return [performance.now() - t0, a]
}

export const b5Reads: Scenario = {
  id: "B5",
  title: "read a completed large batch",
  uses: ["main"],
  requires: ["B1"],
  run: async (ctx) => {
    const { trials, b5Pages, b5Lists } = ctx.sizes
    const { api } = await ctx.sluice("main")
    const batch = ctx.shared.createdLarge
    if (batch === undefined) throw new Error("B5 reads B1's batch, and B1 left none")
    ctx.progress(`B5: waiting for B1's ${batch.rows}-row batch to complete`)
    const done = await api.waitFinal(batch.id, 200)
    if (done.batch.status !== "completed" || done.batch.request_counts.completed !== batch.rows) {
      throw new Error(`B1's batch ended ${done.batch.status} with ${JSON.stringify(done.batch.request_counts)}`)
    }
    const random = mulberry32(5)
    const p50s: Array<number> = []
    const p99s: Array<number> = []
    const jsonl: Array<number> = []
    const lists: Array<number> = []
    let jsonlBytes = 0
    for (let t = 0; t < trials; t++) {
      const pageMs: Array<number> = []
      for (let i = 0; i < b5Pages; i++) {
        const after = 1 + Math.floor(random() * (batch.rows - PAGE))
        const [ms, reply] = await timed(() => api.call("GET", `/v1/batches/${batch.id}/results?limit=${PAGE}&after=batch_req_${after}`))
        const page = JSON.parse(reply.body.toString("utf8")) as { data: ReadonlyArray<unknown> }
        if (page.data.length !== PAGE) throw new Error(`a results page held ${page.data.length} rows, not ${PAGE}`)
        pageMs.push(ms)
      }
      p50s.push(quantile(pageMs, 0.5))
      p99s.push(quantile(pageMs, 0.99))
      const [ms, reply] = await timed(() => api.call("GET", `/v1/batches/${batch.id}/results.jsonl`))
      jsonlBytes = reply.body.length
      jsonl.push(reply.body.length / 1e6 / (ms / 1000))
      const listMs: Array<number> = []
      for (let i = 0; i < b5Lists; i++) listMs.push((await timed(() => api.call("GET", "/v1/batches?limit=20")))[0])
      lists.push(quantile(listMs, 0.5))
      ctx.progress(`B5 trial ${t + 1}: page p50 ${p50s[t]!.toFixed(1)} ms, results.jsonl ${jsonl[t]!.toFixed(0)} MB/s, list p50 ${lists[t]!.toFixed(1)} ms`)
    }
    const scenario = `completed ${batch.rows.toLocaleString("en")}-row batch`
    return {
      figures: [
        figure({ id: "B5", scenario, backend: "embedded", figure: `results page limit=${PAGE}, p50 (ms)`, samples: p50s, digits: 1, target: atMost(20) }),
        figure({ id: "B5", scenario, backend: "embedded", figure: `results page limit=${PAGE}, p99 (ms)`, samples: p99s, digits: 1 }),
        figure({ id: "B5", scenario, backend: "embedded", figure: "results.jsonl download (MB/s)", samples: jsonl, target: atLeast(100) }),
        figure({ id: "B5", scenario, backend: "embedded", figure: "list limit=20, p50 (ms)", samples: lists, digits: 1 }),
      ],
      notes: [
        `B5: ${b5Pages} pages at random offsets and ${b5Lists} list calls per trial, one at a time; results.jsonl is ${(jsonlBytes / 1e6).toFixed(1)} MB (MB = 10^6 bytes).`,
      ],
    }
  },
}
