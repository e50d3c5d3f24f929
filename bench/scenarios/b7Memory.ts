import { atMost, figure } from "../figures.js"
import { MODELS, highWaterMb, residentMb, sampleRss, startSluice } from "../processes.js"
import { batchBody, sizedRows } from "../rows.js"
import type { Scenario } from "../scenario.js"
import { UNFINISHED_PER_ACCOUNT, accountsFor } from "../accounts.js"
import type { SluiceApi } from "../sluiceApi.js"

export const b7Memory: Scenario = {
  id: "B7",
  title: "memory with large batches queued",
  uses: [],
  run: async (ctx) => {
    const { b7Batches, b7Rows, b7SettleMs, b1Rows, b1Bytes, latencyMs, trials } = ctx.sizes
    const sim = await ctx.sim(latencyMs)
    // Rows of B1's size; one slot on the slow simulator, so the batches stay queued.
    const body = batchBody(sizedRows(b7Rows, MODELS.queued, (b1Bytes * b7Rows) / b1Rows))
    const atStart: Array<number> = []
    const afterFirst: Array<number> = []
    const peaks: Array<number> = []
    const sampled: Array<number> = []
    for (let t = 0; t < trials; t++) {
      const sluice = await startSluice({ models: [{ id: MODELS.queued, upstream_url: sim.url, batch_concurrency: 1 }] })
      let apis: Array<SluiceApi> = []
      try {
        atStart.push(residentMb(sluice.pid))
        const during = sampleRss(sluice.pid)
        // More batches than one account may leave unfinished: spread over accounts made for them.
        apis = await accountsFor(sluice.url, b7Batches, "bench-b7")
        for (let b = 0; b < b7Batches; b++) {
          await apis[Math.floor(b / UNFINISHED_PER_ACCOUNT)]!.create(body)
          if (b === 0) afterFirst.push(highWaterMb(sluice.pid))
        }
        await new Promise((r) => setTimeout(r, b7SettleMs))
        const peak = during.stop()
        peaks.push(peak.highWaterMb)
        sampled.push(peak.sampledMb)
        ctx.progress(`B7 trial ${t + 1}: peak RSS ${peak.highWaterMb.toFixed(0)} MB (sampled ${peak.sampledMb.toFixed(0)} MB), ${atStart[t]!.toFixed(0)} MB at start`)
      } finally {
        for (const api of apis) api.close()
        await sluice.stop()
      }
    }
    const scenario = `${b7Batches} × ${b7Rows.toLocaleString("en")}-row batches queued (${(body.length / 2 ** 20).toFixed(1)} MiB each)`
    return {
      figures: [
        figure({ id: "B7", scenario, backend: "embedded", figure: "Sluice RSS after start (MB)", samples: atStart }),
        figure({ id: "B7", scenario, backend: "embedded", figure: "Sluice peak RSS after the first batch, VmHWM (MB)", samples: afterFirst }),
        figure({ id: "B7", scenario, backend: "embedded", figure: "Sluice peak RSS, VmHWM (MB)", samples: peaks, target: atMost(500) }),
        figure({ id: "B7", scenario, backend: "embedded", figure: "Sluice peak RSS, sampled every 100 ms (MB)", samples: sampled }),
      ],
      notes: [
        `B7: a fresh Sluice process per trial; the batches are created one after another (over ${Math.ceil(b7Batches / UNFINISHED_PER_ACCOUNT)} accounts, ${UNFINISHED_PER_ACCOUNT} unfinished batches each at most), then ${b7SettleMs / 1000} s to settle; the model has 1 slot on the ${latencyMs} ms simulator, so nearly every row stays queued; VmHWM is the kernel's high-water mark of the process (node running the server bundle, as \`npm start\` does); MB = 10^6 bytes.`,
      ],
    }
  },
}
