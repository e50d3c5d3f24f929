import type { Context } from "../context.js"
import { readBatchEvents } from "../embeddedLog.js"
import { type Figure, atMost, figure } from "../figures.js"
import { MODELS, type Sim, type Sluice, startSluice } from "../processes.js"
import { batchBody, smallRows } from "../rows.js"
import { type SluiceApi, sluiceApi } from "../sluiceApi.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)))

/** Each deadline model's slots: 80 rows/s on the 200 ms simulator, the rate measured before its trial. */
const SLOTS = 16
/**
 * E's rows in windows of the measured rate, F's created half a window later. In turns from then, each
 * at half the rate, E would end at (2·E − ½) windows, leaving (E − ¾) of a window's rows to expire;
 * earliest-deadline-first ends E at 0.9 of its window and F at 1.25, F's own window ending at 1.5.
 */
const E_WINDOWS = 0.9
const F_WINDOWS = 0.35

/** Rows started ahead of their turn for their deadline on the model, from its /metrics. */
const deadlineStarts = async (url: string, model: string): Promise<number> =>
  (await (await fetch(`${url}/metrics`)).text())
    .split("\n")
    .filter((line) => line.startsWith("sluice_rows_started_total{") && line.includes(`model="${model}"`) && line.includes('order="deadline"'))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0)

/** When the batch ended, from its final event in the log. */
const endedAt = (dataDir: string, id: string): number => {
  const [end] = readBatchEvents(dataDir, [id], ["batch_completed", "batch_expired"])
  if (end?.event.type !== "batch_completed" && end?.event.type !== "batch_expired") throw new Error(`batch ${id} has no end in the log`)
  return end.event.at
}

/**
 * A batch's rows/s while it had the model to itself (until `before`): its rows completed after the first
 * round over the time from the first round's answers to the last, from the log.
 */
const rateOf = (dataDir: string, id: string, before = Number.POSITIVE_INFINITY): number => {
  const at = readBatchEvents(dataDir, [id], ["row_completed"]).flatMap(({ event }) => ("at" in event && event.at < before ? [event.at] : []))
  return ((at.length - SLOTS) * 1000) / (Math.max(...at) - Math.min(...at))
}

const measureRate = async (api: SluiceApi, dataDir: string, model: string, rows: number): Promise<number> => {
  const created = await api.create(batchBody(smallRows(rows, model)))
  const done = await api.waitFinal(created.id, 100)
  if (done.batch.status !== "completed") throw new Error(`batch ${created.id} ended ${done.batch.status}`)
  return rateOf(dataDir, created.id)
}

interface DeadlineTrial {
  readonly rate: number
  /** E's own rate before F was created. */
  readonly eRate: number
  readonly eRows: number
  readonly fRows: number
  readonly expired: number
  readonly eEnd: number
  readonly fEnd: number
  readonly early: number
}

const trial = async (api: SluiceApi, sluice: Sluice, model: string, windowMs: number, rateRows: number): Promise<DeadlineTrial> => {
  // The first batch on the fresh process runs cold: the second measures the rate.
  await measureRate(api, sluice.dataDir, model, Math.ceil(rateRows / 4))
  const rate = await measureRate(api, sluice.dataDir, model, rateRows)
  const eRows = Math.round((E_WINDOWS * windowMs * rate) / 1000)
  const fRows = Math.round((F_WINDOWS * windowMs * rate) / 1000)
  const earlyBefore = await deadlineStarts(sluice.url, model)
  const e = await api.create(batchBody(smallRows(eRows, model)))
  await sleep(windowMs / 2 - (performance.now() - e.sentAt))
  const f = await api.create(batchBody(smallRows(fRows, model)))
  const [eDone, fDone] = await Promise.all([api.waitFinal(e.id, 250), api.waitFinal(f.id, 250)])
  const unfinished = (done: typeof eDone) => done.batch.request_counts.total - done.batch.request_counts.completed
  return {
    rate,
    eRate: rateOf(sluice.dataDir, e.id, f.sentWallMs),
    eRows,
    fRows,
    expired: unfinished(eDone) + unfinished(fDone),
    eEnd: (endedAt(sluice.dataDir, e.id) - e.sentWallMs) / windowMs,
    fEnd: (endedAt(sluice.dataDir, f.id) - e.sentWallMs) / windowMs,
    early: (await deadlineStarts(sluice.url, model)) - earlyBefore,
  }
}

/**
 * B18's deadlines, on a Sluice of their own: its completion window is `b18WindowS`. The trials run at
 * once, one on each of as many models (their queues and rates are their own), so the run takes one
 * window and a half, not one per trial.
 */
export const deadlines = async (ctx: Context, sim: Sim): Promise<{ readonly figures: Array<Figure>; readonly note: string }> => {
  const { b18WindowS: windowS, b18RateRows: rateRows, trials } = ctx.sizes
  const windowMs = windowS * 1000
  const hours = windowS / 3600
  // The window is the server's hours × 3,600,000: a fraction that does not come back whole makes fractional expiry times.
  if (!Number.isInteger(hours * 3_600_000)) throw new Error(`B18: a ${windowS} s window is no whole number of ms in hours (${hours})`)
  const models = Array.from({ length: trials }, (_, i) => ({ id: `bench-deadline-${i + 1}`, upstream_url: sim.url, upstream_model: MODELS.slow, batch_concurrency: SLOTS }))
  ctx.progress(`B18 deadlines: starting Sluice with SLUICE_COMPLETION_WINDOW_HOURS=${hours} (${windowS} s)`)
  const sluice = await startSluice({ models, env: { SLUICE_COMPLETION_WINDOW_HOURS: String(hours) } })
  const api = sluiceApi(sluice.url)
  try {
    const runs = await Promise.all(models.map((m) => trial(api, sluice, m.id, windowMs, rateRows)))
    runs.forEach((r, t) =>
      ctx.progress(
        `B18 deadline trial ${t + 1}: ${r.rate.toFixed(1)} rows/s measured, E's own ${r.eRate.toFixed(1)}; E ${r.eRows} rows ended at ${r.eEnd.toFixed(2)} of its window, F ${r.fRows} rows at ${r.fEnd.toFixed(2)}; ${r.expired} rows expired, ${r.early} started for their deadline`,
      ),
    )
    const scenario = `E at t=0, F half a window later, window ${windowS} s, ${SLOTS} slots, sim ${sim.latencyMs} ms`
    const of = (pick: (r: DeadlineTrial) => number) => runs.map(pick)
    // In turns E has the model alone for half a window and half of it for the other half: ¾ of a window at its rate.
    const turnsWouldExpire = (r: DeadlineTrial) => Math.max(0, Math.round(r.eRows - (0.75 * windowMs * r.eRate) / 1000))
    return {
      figures: [
        figure({ id: "B18", scenario, backend: "embedded", figure: "the model's rate, measured first (rows/s)", samples: of((r) => r.rate), digits: 1 }),
        figure({ id: "B18", scenario, backend: "embedded", figure: "E's own rate before F (rows/s)", samples: of((r) => r.eRate), digits: 1 }),
        figure({ id: "B18", scenario, backend: "embedded", figure: "E's end ÷ its window", samples: of((r) => r.eEnd), digits: 2 }),
        figure({ id: "B18", scenario, backend: "embedded", figure: "F's end ÷ E's window (F's own ends at 1.5)", samples: of((r) => r.fEnd), digits: 2 }),
        figure({ id: "B18", scenario, backend: "embedded", figure: "rows turns alone would leave to expire: E's rows − ¾ window × E's own rate", samples: of(turnsWouldExpire) }),
        figure({ id: "B18", scenario, backend: "embedded", figure: "rows expired (E and F)", samples: of((r) => r.expired), target: atMost(0) }),
        figure({ id: "B18", scenario, backend: "embedded", figure: 'rows started for their deadline (sluice_rows_started_total{order="deadline"})', samples: of((r) => r.early) }),
      ],
      note:
        `B18's deadlines run on a Sluice of their own, started with SLUICE_COMPLETION_WINDOW_HOURS=${hours} (${windowS} s), its ${trials} trial(s) at once, each on a model of its own (${SLOTS} slots on the ${sim.latencyMs} ms simulator). ` +
        `Each trial measures its model's rate with a ${rateRows}-row batch after an unmeasured one (its rows after the first round ÷ the time from the first round's row_completed to the last), then creates E, ${E_WINDOWS} of a window's rows at that rate, and half a window later F, ${F_WINDOWS} of one. ` +
        `Earliest-deadline-first ends E at ${E_WINDOWS} of its window and F at ${(E_WINDOWS + F_WINDOWS).toFixed(2)}, inside F's 1.5; in turns alone E would keep half the model from then and end at ${(2 * E_WINDOWS - 0.5).toFixed(2)} windows, ` +
        "leaving E's rows − ¾ of a window's at E's own rate (measured as the calibration's, over E's rows completed before F's create) to expire. " +
        "Rows expired are E's and F's rows not completed (request_counts); the ends are each batch's batch_completed (or batch_expired) in the log, from E's create. " +
        "With a window this short the 30 s margin puts E at risk from its first row, so the deadline count is nearly all of E's and F's rows, not only those started after F arrived.",
    }
  } finally {
    api.close()
    await sluice.stop()
  }
}
