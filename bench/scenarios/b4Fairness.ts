import { readBatchEvents } from "../embeddedLog.js"
import { atLeast, atMost, figure } from "../figures.js"
import { MODELS } from "../processes.js"
import { batchBody, smallRows } from "../rows.js"
import type { Scenario } from "../scenario.js"
import { jain } from "../stats.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)))

/**
 * Jain's index per window of `window` consecutive row starts, over the span in which every batch
 * still had rows waiting (from the last batch's first start to the first batch's last start);
 * answers the windows' mean and their count. A span shorter than one window counts as one window.
 */
export const windowedJain = (starts: ReadonlyArray<string>, batches: ReadonlyArray<string>, window: number) => {
  const first = Math.max(...batches.map((b) => starts.indexOf(b)))
  const last = Math.min(...batches.map((b) => starts.lastIndexOf(b)))
  const span = starts.slice(first, last + 1)
  // No starts read (the events moved elsewhere in the log) would otherwise read as perfect fairness.
  if (first < 0 || span.length === 0) throw new Error(`no row starts of all ${batches.length} batches in the log to measure fairness over`)
  const indexes: Array<number> = []
  const windows = span.length < window ? [span] : Array.from({ length: Math.floor(span.length / window) }, (_, w) => span.slice(w * window, (w + 1) * window))
  for (const w of windows) indexes.push(jain(batches.map((b) => w.filter((s) => s === b).length)))
  return { mean: indexes.reduce((a, b) => a + b, 0) / indexes.length, windows: indexes.length, span: span.length }
}

/**
 * A small batch's completion time under an ideal equal share of the slots among `backlogged` batches,
 * from its time alone: it runs in rounds of the model's latency, ⌈rows ÷ (slots ÷ backlogged)⌉ of them
 * shared against ⌈rows ÷ slots⌉ alone. No scheduler can beat it without taking slots from another batch,
 * which Jain's index would show.
 */
export const equalShareMs = (aloneMs: number, rows: number, slots: number, backlogged: number): number =>
  (aloneMs * Math.ceil(rows / (slots / backlogged))) / Math.ceil(rows / slots)

export const b4Fairness: Scenario = {
  id: "B4",
  title: "small batches behind a large one",
  uses: ["main"],
  run: async (ctx) => {
    const { b4BigRows, b4SmallRows, b4DelayMs, slots, latencyMs, trials } = ctx.sizes
    const { sluice, api } = await ctx.sluice("main")
    const big = batchBody(smallRows(b4BigRows, MODELS.slow))
    const small = batchBody(smallRows(b4SmallRows, MODELS.slow))
    const completedAt = (id: string) => {
      const [done] = readBatchEvents(sluice.dataDir, [id], ["batch_completed"])
      if (done?.event.type !== "batch_completed") throw new Error(`batch ${id} has no batch_completed in the log`)
      return done.event.at
    }
    const worst: Array<number> = []
    const alone: Array<number> = []
    const versusAlone: Array<number> = []
    const fairness: Array<number> = []
    const detail: Array<string> = []
    for (let t = 0; t < trials; t++) {
      const lone = await api.create(small)
      await api.waitFinal(lone.id, 25)
      const aloneMs = completedAt(lone.id) - lone.sentWallMs
      const large = await api.create(big)
      await sleep(b4DelayMs - (performance.now() - large.acceptedAt))
      const smalls = await Promise.all([0, 1, 2].map(() => api.create(small)))
      await Promise.all(smalls.map((s) => api.waitFinal(s.id, 25)))
      const largeNow = await api.get(large.id)
      if (largeNow.request_counts.completed + slots >= b4BigRows) throw new Error("B4: the large batch ran out of rows before the small ones finished")
      await api.cancel(large.id)
      await api.waitFinal(large.id, 100)
      const times = smalls.map((s) => completedAt(s.id) - s.sentWallMs)
      const ids = [large.id, ...smalls.map((s) => s.id)]
      // In the order they started: each batch's starts are written in its own lane's windows, so the
      // log interleaves the batches a window at a time, not a start at a time.
      const starts = readBatchEvents(sluice.dataDir, ids, ["row_started"])
        .flatMap(({ event }) => (event.type === "row_started" && event.attempt === 1 ? [event] : []))
        .sort((a, b) => a.at - b.at)
        .map((event) => event.batch_id)
      const j = windowedJain(starts, ids, slots)
      const idealMs = equalShareMs(aloneMs, b4SmallRows, slots, ids.length)
      alone.push(aloneMs)
      versusAlone.push(Math.max(...times) / aloneMs)
      worst.push(Math.max(...times) / idealMs)
      fairness.push(j.mean)
      detail.push(
        `${times.map((ms) => ms.toFixed(0)).join("/")} ms vs ${aloneMs.toFixed(0)} ms alone and ${idealMs.toFixed(0)} ms at an equal share, J over ${j.windows} window(s) of ${j.span} starts`,
      )
      ctx.progress(`B4 trial ${t + 1}: small batches ${detail[t]}: worst ×${worst[t]!.toFixed(2)}, J ${j.mean.toFixed(3)}`)
    }
    const scenario = `${b4BigRows.toLocaleString("en")} rows, then 3×${b4SmallRows} rows ${b4DelayMs / 1000} s later; sim ${latencyMs} ms, ${slots} slots`
    return {
      figures: [
        figure({ id: "B4", scenario, backend: "embedded", figure: "small batch alone (ms)", samples: alone }),
        figure({ id: "B4", scenario, backend: "embedded", figure: "worst small batch: time ÷ time alone", samples: versusAlone, digits: 2 }),
        figure({ id: "B4", scenario, backend: "embedded", figure: "worst small batch: time ÷ time at an equal share", samples: worst, digits: 2, target: atMost(1.1) }),
        figure({ id: "B4", scenario, backend: "embedded", figure: `Jain's index, rows started per batch per ${slots} starts`, samples: fairness, digits: 3, target: atLeast(0.95) }),
      ],
      notes: [
        `B4: all four batches are the bootstrap account's (one user), so they take turns by batch; times run from sending the create to the batch_completed event's \`at\` in the embedded log; fairness counts row_started events (first attempts) in the order of their \`at\` while all four batches had rows waiting. Shared equally, each small batch holds ${slots / 4} of the ${slots} slots: ${b4SmallRows} rows take ${Math.ceil(b4SmallRows / (slots / 4))} rounds of ${latencyMs} ms against ${Math.ceil(b4SmallRows / slots)} alone, so the time at an equal share is the time alone × ${Math.ceil(b4SmallRows / (slots / 4))} ÷ ${Math.ceil(b4SmallRows / slots)}; B4's figure is the worst small batch's time ÷ that. Per trial: ${detail.join("; ")}.`,
      ],
    }
  },
}
