import { HIGH_STARTS, SHARE_CYCLE } from "../../src/domain/scheduling/shares.js"
import type { Priority } from "../../src/domain/scheduling/priority.js"
import { accountAllowed } from "../accounts.js"
import type { Context } from "../context.js"
import { cpuMs } from "../cpuTime.js"
import { readBatchEvents } from "../embeddedLog.js"
import { atMost, figure } from "../figures.js"
import { MODELS, startSluice } from "../processes.js"
import { smallRows } from "../rows.js"
import type { Scenario } from "../scenario.js"
import { type Created, type SluiceApi, sluiceApi } from "../sluiceApi.js"
import { deadlines } from "./b18Deadlines.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)))

/**
 * The model the priorities share: its upstream slow enough that the slots, not Sluice's CPU on a busy
 * machine, bound its rate (64 slots at 200 ms: 320 rows/s), as a real model's do.
 */
const MODEL = "bench-priorities"
const LATENCY_MS = 200
/** After the backlog's creates, before the `high` batch: the model in its steady state, not catching up on the creates. */
const SETTLE_MS = 1_000
const STANDARD_SHARE = (SHARE_CYCLE - HIGH_STARTS) / SHARE_CYCLE

/** A batch of `rows` small rows; `standard` as the default, with no `priority` sent. */
const body = (rows: number, priority: Priority = "standard") =>
  JSON.stringify({ requests: smallRows(rows, MODEL), ...(priority === "standard" ? {} : { priority }) })

/** Each batch's first attempts, in the order of their `at`, as B4 counts them. */
const startOrder = (dataDir: string, ids: ReadonlyArray<string>) =>
  readBatchEvents(dataDir, ids, ["row_started"])
    .flatMap(({ event }) => (event.type === "row_started" && event.attempt === 1 ? [event] : []))
    .sort((a, b) => a.at - b.at)

const completedAt = (dataDir: string, id: string) => {
  const [done] = readBatchEvents(dataDir, [id], ["batch_completed"])
  if (done?.event.type !== "batch_completed") throw new Error(`batch ${id} has no batch_completed in the log`)
  return done.event.at
}

/** Where a batch's time went, from sending its create: its first and last row starts, and its completion. */
const phases = (dataDir: string, created: Created) => {
  const at = startOrder(dataDir, [created.id]).map((e) => e.at - created.sentWallMs)
  return `${Math.min(...at)}/${Math.max(...at)}/${(completedAt(dataDir, created.id) - created.sentWallMs).toFixed(0)}`
}

const cancelAll = async (api: SluiceApi, ids: ReadonlyArray<string>) => {
  await Promise.all(ids.map((id) => api.cancel(id)))
  await Promise.all(ids.map((id) => api.waitFinal(id, 100)))
}

/** A `high` batch alone on the idle model, then the same behind the `standard` backlog: its time behind ÷ alone. */
const overtake = async (ctx: Context, api: SluiceApi, urgent: SluiceApi, dataDir: string) => {
  const { b18BacklogBatches: batches, b18BacklogRows: rows, b18HighRows: highRows, slots } = ctx.sizes
  const high = body(highRows, "high")
  const backlogBody = body(rows)
  const lone = await urgent.create(high)
  await urgent.waitFinal(lone.id, 25)
  const aloneMs = completedAt(dataDir, lone.id) - lone.sentWallMs
  const backlog: Array<string> = []
  const t0 = performance.now()
  for (let b = 0; b < batches; b++) backlog.push((await api.create(backlogBody)).id)
  await Promise.all(backlog.map((id) => api.waitUntil(id, (b) => b.status === "in_progress", 50)))
  ctx.progress(`B18: the backlog created in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
  await sleep(SETTLE_MS)
  const behind = await urgent.create(high)
  await urgent.waitFinal(behind.id, 25)
  const behindMs = completedAt(dataDir, behind.id) - behind.sentWallMs
  const left = (await Promise.all(backlog.map((id) => api.get(id)))).reduce((n, b) => n + b.request_counts.total - b.request_counts.completed, 0)
  const t1 = performance.now()
  await cancelAll(api, backlog)
  ctx.progress(`B18: the backlog cancelled in ${((performance.now() - t1) / 1000).toFixed(1)} s`)
  if (left < 2 * slots) throw new Error(`B18: the backlog had ${left} rows left when the high batch finished, not enough to keep the model busy`)
  return { aloneMs, behindMs, left, phases: `${phases(dataDir, lone)} alone, ${phases(dataDir, behind)} behind` }
}

/** A `high` and a `standard` batch together: `standard`'s share of the starts while both had rows waiting. */
const share = async (ctx: Context, api: SluiceApi, urgent: SluiceApi, dataDir: string) => {
  const { b18ShareRows: rows, b18ShareStarts: starts } = ctx.sizes
  const high = await urgent.create(body(rows, "high"))
  const standard = await api.create(body(rows))
  await urgent.waitUntil(high.id, (b) => b.request_counts.completed >= starts, 50)
  await Promise.all([urgent.cancel(high.id), api.cancel(standard.id)])
  await Promise.all([urgent.waitFinal(high.id, 100), api.waitFinal(standard.id, 100)])
  const order = startOrder(dataDir, [high.id, standard.id]).map((e) => e.batch_id)
  const first = Math.max(order.indexOf(high.id), order.indexOf(standard.id))
  const last = Math.min(order.lastIndexOf(high.id), order.lastIndexOf(standard.id))
  const span = order.slice(first, last + 1)
  if (first < 0 || span.length < SHARE_CYCLE) throw new Error(`B18: ${span.length} starts while both batches had rows waiting`)
  const standardStarts = span.filter((id) => id === standard.id).length
  return { share: standardStarts / span.length, span: span.length, standardStarts }
}

/** The `standard` batch run to completion, alone or with a `background` batch already running: its rows/s and Sluice's CPU a row. */
const standardRun = async (ctx: Context, api: SluiceApi, pid: number, dataDir: string, withBackground: boolean) => {
  const { b18StandardRows: rows, b18ShareRows: backgroundRows, slots } = ctx.sizes
  const background = withBackground ? await api.create(body(backgroundRows, "background")) : undefined
  if (background !== undefined) await api.waitUntil(background.id, (b) => b.request_counts.completed >= slots, 25)
  const cpuBefore = cpuMs(pid)
  const created = await api.create(body(rows))
  const done = await api.waitFinal(created.id, 25)
  const cpu = cpuMs(pid) - cpuBefore
  if (done.batch.status !== "completed" || done.batch.request_counts.completed !== rows) {
    throw new Error(`batch ${created.id} ended ${done.batch.status} with ${JSON.stringify(done.batch.request_counts)}`)
  }
  if (background !== undefined) await cancelAll(api, [background.id])
  const starts = startOrder(dataDir, background === undefined ? [created.id] : [created.id, background.id])
  const standardAt = starts.filter((e) => e.batch_id === created.id).map((e) => e.at)
  const [from, to] = [Math.min(...standardAt), Math.max(...standardAt)]
  return {
    rate: rows / ((completedAt(dataDir, created.id) - created.sentWallMs) / 1000),
    cpuPerRow: cpu / rows,
    firstStartMs: from - created.sentWallMs,
    backgroundStarts: starts.filter((e) => e.batch_id === background?.id && e.at > from && e.at < to).length,
  }
}

/**
 * Two `standard` runs alone and two beside `background`, in the order A B B A (B A A B on odd trials),
 * so a steady drift of the machine's speed favours neither side: each side's mean.
 */
const backgroundCost = async (ctx: Context, api: SluiceApi, pid: number, dataDir: string, trial: number) => {
  const order = trial % 2 === 0 ? [false, true, true, false] : [true, false, false, true]
  const runs: Array<{ readonly withBackground: boolean } & Awaited<ReturnType<typeof standardRun>>> = []
  for (const withBackground of order) runs.push({ withBackground, ...(await standardRun(ctx, api, pid, dataDir, withBackground)) })
  const side = (withBackground: boolean) => {
    const of = runs.filter((r) => r.withBackground === withBackground)
    const mean = (pick: (r: (typeof runs)[number]) => number) => of.reduce((sum, r) => sum + pick(r), 0) / of.length
    return { rate: mean((r) => r.rate), cpuPerRow: mean((r) => r.cpuPerRow), firstStartMs: mean((r) => r.firstStartMs), backgroundStarts: mean((r) => r.backgroundStarts) }
  }
  return { alone: side(false), beside: side(true) }
}

/** Parts one to three on a Sluice of their own, each trial in turn: the overtake, the share, the background's cost. */
const priorities = async (ctx: Context, simUrl: string) => {
  const sluice = await startSluice({ models: [{ id: MODEL, upstream_url: simUrl, upstream_model: MODELS.slow, batch_concurrency: ctx.sizes.slots }] })
  const api = sluiceApi(sluice.url)
  let urgent: SluiceApi | undefined
  const over = { alone: [] as Array<number>, ratio: [] as Array<number> }
  const shares = { share: [] as Array<number>, error: [] as Array<number> }
  const bg = { alone: [] as Array<number>, with: [] as Array<number>, cost: [] as Array<number>, cpuAlone: [] as Array<number>, cpuWith: [] as Array<number>, starts: [] as Array<number> }
  const detail: Array<string> = []
  try {
    urgent = await accountAllowed(sluice.url, "b18-urgent", "high")
    // Unmeasured, so that the first time alone is not a cold process's.
    const warm = await urgent.create(body(ctx.sizes.b18HighRows, "high"))
    await urgent.waitFinal(warm.id, 25)
    for (let t = 0; t < ctx.sizes.trials; t++) {
      const o = await overtake(ctx, api, urgent, sluice.dataDir)
      over.alone.push(o.aloneMs)
      over.ratio.push(o.behindMs / o.aloneMs)
      const s = await share(ctx, api, urgent, sluice.dataDir)
      shares.share.push(s.share)
      shares.error.push((100 * Math.abs(s.share - STANDARD_SHARE)) / STANDARD_SHARE)
      const { alone, beside } = await backgroundCost(ctx, api, sluice.pid, sluice.dataDir, t)
      bg.alone.push(alone.rate)
      bg.with.push(beside.rate)
      bg.cost.push(100 * (1 - beside.rate / alone.rate))
      bg.cpuAlone.push(alone.cpuPerRow)
      bg.cpuWith.push(beside.cpuPerRow)
      bg.starts.push(beside.backgroundStarts)
      detail.push(
        `high ${o.behindMs.toFixed(0)} ms behind vs ${o.aloneMs.toFixed(0)} ms alone (first start/last start/completed ${o.phases} ms; ${o.left.toLocaleString("en")} backlog rows left); ` +
          `standard ${s.standardStarts} of ${s.span} starts; standard ${alone.rate.toFixed(0)} rows/s alone, ${beside.rate.toFixed(0)} beside background (first start ${alone.firstStartMs.toFixed(0)} and ${beside.firstStartMs.toFixed(0)} ms after the create)`,
      )
      ctx.progress(`B18 trial ${t + 1}: ${detail[t]}`)
    }
    return { over, shares, bg, detail }
  } finally {
    api.close()
    urgent?.close()
    await sluice.stop()
  }
}

export const b18Priorities: Scenario = {
  id: "B18",
  title: "priorities and deadlines",
  uses: [],
  run: async (ctx) => {
    const { b18BacklogBatches, b18BacklogRows, b18HighRows, b18ShareRows, b18ShareStarts, b18StandardRows, slots } = ctx.sizes
    const sim = await ctx.sim(LATENCY_MS)
    ctx.progress("B18: starting Sluice (embedded log)")
    const { over, shares, bg, detail } = await priorities(ctx, sim.url)
    const dl = await deadlines(ctx, sim)
    const model = `sim ${LATENCY_MS} ms, ${slots} slots`
    const overtakeScenario = `${b18HighRows} high rows behind ${b18BacklogBatches} × ${b18BacklogRows.toLocaleString("en")} standard; ${model}`
    const shareScenario = `${b18ShareRows.toLocaleString("en")} high rows beside ${b18ShareRows.toLocaleString("en")} standard, to ${b18ShareStarts.toLocaleString("en")} high starts; ${model}`
    const bgScenario = `${b18StandardRows.toLocaleString("en")} standard rows alone and beside a ${b18ShareRows.toLocaleString("en")}-row background batch already running; ${model}`
    return {
      figures: [
        figure({ id: "B18", scenario: overtakeScenario, backend: "embedded", figure: "high batch alone (ms)", samples: over.alone }),
        figure({ id: "B18", scenario: overtakeScenario, backend: "embedded", figure: "high batch behind the backlog ÷ alone", samples: over.ratio, digits: 2, target: atMost(1.25) }),
        figure({ id: "B18", scenario: shareScenario, backend: "embedded", figure: `standard's share of starts (documented ${STANDARD_SHARE})`, samples: shares.share, digits: 4 }),
        figure({ id: "B18", scenario: shareScenario, backend: "embedded", figure: "standard's share: relative error (%)", samples: shares.error, digits: 1, target: atMost(5) }),
        figure({ id: "B18", scenario: bgScenario, backend: "embedded", figure: "standard rows/s alone", samples: bg.alone }),
        figure({ id: "B18", scenario: bgScenario, backend: "embedded", figure: "standard rows/s beside background", samples: bg.with }),
        figure({ id: "B18", scenario: bgScenario, backend: "embedded", figure: "standard rows/s lost to background (%)", samples: bg.cost, digits: 1, target: atMost(3) }),
        figure({ id: "B18", scenario: bgScenario, backend: "embedded", figure: "Sluice CPU ms a standard row, alone", samples: bg.cpuAlone, digits: 3 }),
        figure({ id: "B18", scenario: bgScenario, backend: "embedded", figure: "Sluice CPU ms a standard row, beside background", samples: bg.cpuWith, digits: 3 }),
        figure({ id: "B18", scenario: bgScenario, backend: "embedded", figure: "background rows started between standard's first and last start", samples: bg.starts }),
        ...dl.figures,
      ],
      notes: [
        `B18: on a Sluice of its own (embedded log), one model of ${slots} slots on the ${LATENCY_MS} ms simulator (${((slots * 1000) / LATENCY_MS).toFixed(0)} rows/s at most). The standard batches are the bootstrap account's, sent without a priority; the high ones are account b18-urgent's, allowed high by PATCH /admin/v1/accounts/b18-urgent {"max_priority":"high"}. ` +
          `The high batch is timed from sending its create to its batch_completed \`at\` in the log, alone on the idle model and then ${SETTLE_MS / 1000} s after the backlog's ${b18BacklogBatches} batches were all in_progress (the backlog is cancelled after, and must still have rows left); at ${HIGH_STARTS} of every ${SHARE_CYCLE} starts it should take about ${SHARE_CYCLE}/${HIGH_STARTS} of its time alone plus a round. ` +
          `The share counts row_started events (first attempts) of the two batches in the order of their \`at\`, from the later batch's first start to the earlier batch's last (both are cancelled once the high one has ${b18ShareStarts.toLocaleString("en")} rows completed); its error is |share − ${STANDARD_SHARE}| ÷ ${STANDARD_SHARE}. ` +
          "The background batch is created first and has a round of rows completed before the standard batch is created; the standard batch's rows/s run from sending its create to its batch_completed `at`, Sluice's CPU (all threads, /proc) from before the create to its completion being seen; each trial runs it twice alone and twice beside a background batch, A B B A (B A A B on odd trials), and takes each side's mean. " +
          `Per trial: ${detail.join("; ")}.`,
        dl.note,
      ],
    }
  },
}
