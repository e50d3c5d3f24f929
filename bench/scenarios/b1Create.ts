import { closeSync, fsyncSync, openSync, rmSync, writeSync } from "node:fs"
import { join } from "node:path"
import { atMost, figure } from "../figures.js"
import { MODELS, tempDir } from "../processes.js"
import { batchBody, sizedRows } from "../rows.js"
import type { Scenario } from "../scenario.js"
import { ratios } from "../stats.js"

/** What the create has to do at the least: parse the bytes, and write them durably once. */
const parseWriteFsync = (body: Buffer, path: string): number => {
  const t0 = performance.now()
  JSON.parse(body.toString("utf8"))
  const fd = openSync(path, "w")
  try {
    writeSync(fd, body)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  const ms = performance.now() - t0
  rmSync(path)
  return ms
}

export const b1Create: Scenario = {
  id: "B1",
  title: "create one large batch",
  uses: ["main"],
  run: async (ctx) => {
    const { b1Rows, b1Bytes, trials } = ctx.sizes
    const { api } = await ctx.sluice("main")
    const body = Buffer.from(batchBody(sizedRows(b1Rows, MODELS.fast, b1Bytes)))
    const scenario = `create ${b1Rows.toLocaleString("en")} rows, ${(body.length / 2 ** 20).toFixed(1)} MiB`
    const scratch = tempDir("sluice-bench-b1-")
    const creates: Array<number> = []
    const baselines: Array<number> = []
    for (let t = 0; t < trials; t++) {
      baselines.push(parseWriteFsync(body, join(scratch.path, "body.json")))
      const created = await api.create(body)
      creates.push(created.acceptedAt - created.sentAt)
      ctx.progress(`B1 trial ${t + 1}: create ${creates[t]!.toFixed(0)} ms, parse+write+fsync ${baselines[t]!.toFixed(0)} ms`)
      // The last batch runs to completion for B5; the others would only slow the next trial down.
      if (t < trials - 1) await api.discard(created.id)
      else ctx.shared.createdLarge = { id: created.id, rows: b1Rows }
    }
    await scratch.remove()
    return {
      figures: [
        figure({ id: "B1", scenario, backend: "embedded", figure: "create latency (ms)", samples: creates }),
        figure({ id: "B1", scenario, backend: "-", figure: "baseline: JSON.parse + write + fsync (ms)", samples: baselines }),
        figure({ id: "B1", scenario, backend: "embedded", figure: "create ÷ baseline", samples: ratios(creates, baselines), digits: 2, target: atMost(2.5) }),
      ],
      notes: [
        `B1: the create runs from sending the POST to its answer; the baseline JSON.parses the same ${(body.length / 1e6).toFixed(1)} MB and writes and fsyncs them to a new file in the same temporary file system as Sluice's data directory, just before each create; each ratio pairs the two of one trial. The earlier trials' batches are cancelled and deleted; the last one completes for B5.`,
      ],
    }
  },
}
