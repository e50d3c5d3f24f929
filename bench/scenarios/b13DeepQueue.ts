import { atLeast, figure } from "../figures.js"
import { UNFINISHED_PER_ACCOUNT, accountsFor } from "../accounts.js"
import { MODELS, startSluice } from "../processes.js"
import { batchBody, smallRows } from "../rows.js"
import type { Scenario } from "../scenario.js"
import type { SluiceApi } from "../sluiceApi.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Completed rows across every batch of these accounts (one list call each). */
/** The completed rows of every batch the accounts hold. */
export const completedRows = async (apis: ReadonlyArray<SluiceApi>): Promise<number> => {
  let sum = 0
  for (const api of apis) {
    const reply = await api.call("GET", "/v1/batches?limit=100")
    const page = JSON.parse(reply.body.toString("utf8")) as { data: ReadonlyArray<{ request_counts: { completed: number } }> }
    for (const b of page.data) sum += b.request_counts.completed
  }
  return sum
}

/** Rows/s between the first poll at or past `from` completed rows and the first `window` rows later, polled every 50 ms. */
const windowRate = async (apis: ReadonlyArray<SluiceApi>, from: number, window: number): Promise<number> => {
  let first: { readonly n: number; readonly at: number } | undefined
  for (;;) {
    const n = await completedRows(apis)
    const at = performance.now()
    if (first === undefined) {
      if (n >= from) first = { n, at }
    } else if (n - first.n >= window) return (n - first.n) / ((at - first.at) / 1000)
    await sleep(50)
  }
}

export const b13DeepQueue: Scenario = {
  id: "B13",
  title: "throughput with 1,000,000 rows queued against 20,000",
  uses: [],
  run: async (ctx) => {
    const { throughputRows, slots, trials, b13Batches, b13Rows, b13SteadyRows, b13WindowRows } = ctx.sizes
    const sim = await ctx.sim(0)
    const shallowBody = batchBody(smallRows(throughputRows, MODELS.queued))
    const deepBody = batchBody(smallRows(b13Rows, MODELS.queued))
    const shallow: Array<number> = []
    const deep: Array<number> = []
    for (let t = 0; t < trials; t++) {
      const sluice = await startSluice({ models: [{ id: MODELS.queued, upstream_url: sim.url, batch_concurrency: slots }] })
      let apis: Array<SluiceApi> = []
      try {
        apis = await accountsFor(sluice.url, b13Batches, "bench-b13")
        const first = await apis[0]!.create(shallowBody)
        shallow.push(await windowRate(apis, b13SteadyRows, b13WindowRows))
        await apis[0]!.waitFinal(first.id, 100)
        await apis[0]!.remove(first.id)

        const created: Array<{ readonly api: SluiceApi; readonly id: string }> = []
        for (let b = 0; b < b13Batches; b++) {
          const api = apis[Math.floor(b / UNFINISHED_PER_ACCOUNT)]!
          created.push({ api, id: (await api.create(deepBody)).id })
        }
        const doneAtStart = await completedRows(apis)
        const queuedAtStart = b13Batches * b13Rows - doneAtStart
        deep.push(await windowRate(apis, doneAtStart + b13SteadyRows, b13WindowRows))
        ctx.progress(
          `B13 trial ${t + 1}: ${deep[t]!.toFixed(0)} rows/s with ${queuedAtStart.toLocaleString("en")} rows unfinished once all were created, ${shallow[t]!.toFixed(0)} rows/s with ${throughputRows.toLocaleString("en")}`,
        )
        ctx.progress(`B13: cancelling and deleting the ${b13Batches} batches`)
        await Promise.all(created.map(({ api, id }) => api.discard(id)))
      } finally {
        for (const api of apis) api.close()
        await sluice.stop()
      }
    }
    const scenario = `${b13Batches} × ${b13Rows.toLocaleString("en")} rows queued against one ${throughputRows.toLocaleString("en")}-row batch, sim 0 ms, ${slots} slots`
    return {
      figures: [
        figure({ id: "B13", scenario, backend: "embedded", figure: `rows/s, ${throughputRows.toLocaleString("en")} rows queued`, samples: shallow }),
        figure({ id: "B13", scenario, backend: "embedded", figure: `rows/s, ${(b13Batches * b13Rows).toLocaleString("en")} rows queued`, samples: deep }),
        figure({ id: "B13", scenario, backend: "embedded", figure: "rows/s deep ÷ shallow", samples: deep.map((d, i) => d / shallow[i]!), digits: 2, target: atLeast(0.9) }),
      ],
      notes: [
        `B13: a fresh Sluice process per trial (embedded log), one model with ${slots} slots on the 0 ms simulator. First one ${throughputRows.toLocaleString("en")}-row batch; then ${b13Batches} batches of ${b13Rows.toLocaleString("en")} rows created one after another, spread over ${Math.ceil(b13Batches / UNFINISHED_PER_ACCOUNT)} internal-tier accounts (the limit is ${UNFINISHED_PER_ACCOUNT} unfinished batches an account; the others made with the admin API). ` +
          `Each rate is over a window of ${b13WindowRows.toLocaleString("en")} completed rows that starts once ${b13SteadyRows.toLocaleString("en")} more rows have completed (for the deep queue: after the last create), counted by polling each account's batch list every 50 ms, the same calls in both; the deep batches are then cancelled and deleted, not run to the end.`,
      ],
    }
  },
}
