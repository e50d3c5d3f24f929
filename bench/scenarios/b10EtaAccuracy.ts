import { type BatchStatus, FinalBatchStatuses } from "../../src/domain/api/BatchStatus.js"
import { readBatchEvents } from "../embeddedLog.js"
import { atMost, figure } from "../figures.js"
import { MODELS } from "../processes.js"
import { batchBody, smallRows } from "../rows.js"
import type { Scenario } from "../scenario.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)))
const MARKS = [0.1, 0.5, 0.9] as const
/** The estimate is in whole seconds: with less time than this left, its rounding is most of its error. */
const MIN_LEFT_MS = 2_000

interface Reading {
  readonly readMs: number
  readonly etaS: number | null
}

/** |estimate − real completion| ÷ the real time left when the estimate was read; NaN with no estimate. */
export const etaError = (reading: Reading, doneMs: number): number =>
  reading.etaS === null ? Number.NaN : Math.abs(reading.etaS * 1000 - doneMs) / Math.max(1, doneMs - reading.readMs)

/**
 * B10: on B4's workload (a large batch, then three small ones), each batch's
 * `estimated_completion_at` is read when 10 %, 50 % and 90 % of its rows have settled, and compared
 * with when it really completed (its `batch_completed` in the log), relative to the time then left.
 */
export const b10EtaAccuracy: Scenario = {
  id: "B10",
  title: "ETA accuracy on B4's workload",
  uses: ["main"],
  run: async (ctx) => {
    const { b4BigRows, b4SmallRows, b4DelayMs, slots, latencyMs, trials } = ctx.sizes
    const { sluice, api } = await ctx.sluice("main")
    const big = batchBody(smallRows(b4BigRows, MODELS.slow))
    const small = batchBody(smallRows(b4SmallRows, MODELS.slow))
    const errors = new Map<number, Array<number>>(MARKS.map((m) => [m, []]))
    const bigErrors = new Map<number, Array<number>>(MARKS.map((m) => [m, []]))
    const missing: Array<string> = []
    const short: Array<string> = []
    for (let t = 0; t < trials; t++) {
      const large = await api.create(big)
      await sleep(b4DelayMs - (performance.now() - large.acceptedAt))
      const smalls = await Promise.all([0, 1, 2].map(() => api.create(small)))
      const ids = [large.id, ...smalls.map((s) => s.id)]
      const readings = new Map<string, Map<number, Reading>>(ids.map((id) => [id, new Map()]))
      const open = new Set(ids)
      while (open.size > 0) {
        await Promise.all(
          [...open].map(async (id) => {
            const readMs = Date.now()
            const b = (await api.call("GET", `/v1/batches/${id}`).then((r) => JSON.parse(r.body.toString("utf8")))) as {
              status: BatchStatus
              request_counts: { total: number; completed: number; failed: number }
              estimated_completion_at: number | null
            }
            const done = (b.request_counts.completed + b.request_counts.failed) / b.request_counts.total
            const got = readings.get(id)!
            for (const mark of MARKS) if (done >= mark && !got.has(mark) && b.estimated_completion_at !== undefined) got.set(mark, { readMs, etaS: b.estimated_completion_at })
            if (FinalBatchStatuses.has(b.status)) open.delete(id)
          }),
        )
        await sleep(20)
      }
      const doneAt = new Map(readBatchEvents(sluice.dataDir, ids, ["batch_completed"]).map(({ event }) => [event.batch_id, event.type === "batch_completed" ? event.at : Number.NaN]))
      for (const id of ids) {
        for (const mark of MARKS) {
          const reading = readings.get(id)!.get(mark)
          const doneMs = doneAt.get(id)
          if (reading === undefined || doneMs === undefined) {
            missing.push(`${id} at ${mark * 100} %`)
            continue
          }
          const e = etaError(reading, doneMs)
          if (doneMs - reading.readMs < MIN_LEFT_MS) short.push(`${id === large.id ? "large" : "small"} at ${mark * 100} % (${((doneMs - reading.readMs) / 1000).toFixed(1)} s left, error ${e.toFixed(2)})`)
          else if (Number.isNaN(e)) missing.push(`${id} at ${mark * 100} % (no estimate)`)
          else (id === large.id ? bigErrors : errors).get(mark)!.push(e)
        }
      }
      ctx.progress(
        `B10 trial ${t + 1}: error ÷ time left at 10/50/90 %: large ${MARKS.map((m) => bigErrors.get(m)!.at(-1)?.toFixed(2) ?? "-").join("/")}, small ${MARKS.map((m) => errors.get(m)!.slice(-3).map((e) => e.toFixed(2)).join(",")).join(" / ")}`,
      )
    }
    const scenario = `B4's workload: ${b4BigRows.toLocaleString("en")} rows, then 3×${b4SmallRows} rows ${b4DelayMs / 1000} s later; sim ${latencyMs} ms, ${slots} slots`
    const all = (mark: number) => [...bigErrors.get(mark)!, ...errors.get(mark)!]
    return {
      figures: [
        ...MARKS.map((mark) =>
          figure({
            id: "B10",
            scenario,
            backend: "embedded",
            figure: `ETA error ÷ time left, read at ${mark * 100} % (every batch)`,
            samples: all(mark),
            digits: 2,
            ...(mark === 0.5 ? { target: atMost(0.2) } : {}),
          }),
        ),
        figure({ id: "B10", scenario, backend: "embedded", figure: "ETA error ÷ time left at 50 %, the large batch", samples: bigErrors.get(0.5)!, digits: 2 }),
      ],
      notes: [
        `B10: estimated_completion_at is in whole seconds, so readings with under ${MIN_LEFT_MS / 1000} s left are not counted (their error is mostly that rounding): ${short.length === 0 ? "none" : short.join(", ")}. Readings with no estimate (no rate measured yet): ${missing.length === 0 ? "none" : missing.join(", ")}.`,
      ],
    }
  },
}
