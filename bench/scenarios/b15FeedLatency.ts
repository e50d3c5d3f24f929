import { startGatedUpstream } from "../../test/support/gatedUpstream.js"
import type { Context } from "../context.js"
import { cpuMs } from "../cpuTime.js"
import { rowCompletedAppendTimes } from "../embeddedLog.js"
import { type Backend, type Figure, figure } from "../figures.js"
import { type Reply, keepAliveAgent, request } from "../http.js"
import { startNats, startSluice } from "../processes.js"
import { type Row, batchBody } from "../rows.js"
import type { Scenario } from "../scenario.js"
import { sluiceApi } from "../sluiceApi.js"
import { quantile } from "../stats.js"

/** The feed's model: one slot, so its rows complete one at a time, each when the bench lets it. */
const MODEL = "bench-feed"
/** The longest wait the feed allows: the consumer never times out between two completions. */
const WAIT_MS = 25_000
/** Rows completed before the timed ones: the first cursor, and a warm process. */
const WARMUP = 5
const SCRAPES_TIMED = 100

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface FeedEvent {
  readonly completion_id: string
  readonly custom_id: string | null
  readonly status: string
  readonly completed_at: string
}

const page = (reply: Reply) => JSON.parse(reply.body.toString("utf8")) as { readonly data: ReadonlyArray<FeedEvent> }

/** Polls `ready` every millisecond, in the bench's own process, until it holds. */
const until = async (ready: () => boolean, what: string, timeoutMs = 60_000) => {
  const deadline = performance.now() + timeoutMs
  while (!ready()) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`)
    await sleep(1)
  }
}

/** The long polls of the feed waiting in Sluice now (its `sluice_completion_feed_waiting` gauge). */
const waitingPolls = async (agent: ReturnType<typeof keepAliveAgent>, baseUrl: string) => {
  const text = (await request(agent, `${baseUrl}/metrics`)).body.toString("utf8")
  const match = /^sluice_completion_feed_waiting(?:\{[^}]*\})? (\d+)/m.exec(text)
  if (match === null) throw new Error("/metrics has no sluice_completion_feed_waiting")
  return Number(match[1])
}

const heldRows = (trial: number, n: number): Array<Row> =>
  Array.from({ length: n }, (_, i): Row => ({
    custom_id: `t${trial}-r${i}`,
    body: { model: MODEL, messages: [{ role: "user", content: `hold t${trial} r${i}` }], max_tokens: 8 },
  }))

/**
 * On its own Sluice (and nats-server), a consumer waits on the feed after the newest completion while
 * each row of a batch is held at the upstream; once the wait is seen in Sluice's gauge the row is
 * answered, and the time runs until the consumer has the row's event.
 */
const measure = async (ctx: Context, backend: Backend): Promise<Array<Figure>> => {
  const { b15Completions: n, trials } = ctx.sizes
  const upstream = await startGatedUpstream()
  const nats = backend === "nats" ? await startNats() : undefined
  ctx.progress(`B15: starting Sluice (${backend} log) with a one-slot model on the bench's held upstream`)
  const sluice = await startSluice({ models: [{ id: MODEL, upstream_url: upstream.url, batch_concurrency: 1 }], ...(nats === undefined ? {} : { natsUrl: nats.url }) })
  const api = sluiceApi(sluice.url)
  const scraper = keepAliveAgent(1)
  const fromUpstream = { p50: [] as Array<number>, p99: [] as Array<number> }
  const fromStored = { p50: [] as Array<number>, p99: [] as Array<number> }
  const cpu: Array<number> = []
  /** Embedded only, from the log's own append times: completed_at → appended, appended → the consumer's answer. */
  const toLog: Array<number> = []
  const fromLog: Array<number> = []
  try {
    for (let t = 0; t < trials; t++) {
      const rows = heldRows(t, WARMUP + n)
      const text = (i: number) => rows[i]!.body.messages[0]!.content
      const created = await api.create(batchBody(rows))
      for (let i = 0; i < WARMUP; i++) {
        await until(() => upstream.isHeld(text(i)), `row ${i} of ${created.id} at the upstream`)
        upstream.release(text(i))
      }
      let cursor: string
      for (;;) {
        const newest = page(await api.call("GET", "/v1/responses/events?limit=1")).data[0]
        if (newest?.custom_id === rows[WARMUP - 1]!.custom_id) {
          cursor = newest.completion_id
          break
        }
        await sleep(10)
      }
      const upstreamMs: Array<number> = []
      const storedMs: Array<number> = []
      const settled: Array<{ readonly row: number; readonly completedAt: number; readonly arrivedWallMs: number }> = []
      let scrapes = 0
      const cpuBefore = cpuMs(sluice.pid)
      for (let i = WARMUP; i < WARMUP + n; i++) {
        await until(() => upstream.isHeld(text(i)), `row ${i} of ${created.id} at the upstream`)
        const poll = api.call("GET", `/v1/responses/events?starting_after=${cursor}&wait_ms=${WAIT_MS}`)
        for (;;) {
          await sleep(2)
          scrapes++
          if ((await waitingPolls(scraper, sluice.url)) >= 1) break
        }
        const answeredUpstreamAt = performance.now()
        upstream.release(text(i))
        const reply = await poll
        const arrivedAt = performance.now()
        const arrivedWallMs = Date.now()
        const events = page(reply).data
        const event = events[0]
        if (events.length !== 1 || event === undefined || event.custom_id !== rows[i]!.custom_id || event.status !== "completed") {
          throw new Error(`the poll after ${cursor} answered ${JSON.stringify(events.map((e) => [e.custom_id, e.status]))}, not ${rows[i]!.custom_id} completed`)
        }
        upstreamMs.push(arrivedAt - answeredUpstreamAt)
        storedMs.push(arrivedWallMs - Date.parse(event.completed_at))
        settled.push({ row: i, completedAt: Date.parse(event.completed_at), arrivedWallMs })
        cursor = event.completion_id
      }
      const loopCpu = cpuMs(sluice.pid) - cpuBefore
      // What the loop's /metrics reads cost by themselves, read back to back on the idle process.
      const scrapeBefore = cpuMs(sluice.pid)
      for (let s = 0; s < SCRAPES_TIMED; s++) await waitingPolls(scraper, sluice.url)
      const perScrape = (cpuMs(sluice.pid) - scrapeBefore) / SCRAPES_TIMED
      cpu.push((loopCpu - scrapes * perScrape) / n)
      const done = await api.waitFinal(created.id, 50)
      if (done.batch.status !== "completed" || done.batch.request_counts.completed !== rows.length) {
        throw new Error(`batch ${created.id} ended ${done.batch.status} with ${JSON.stringify(done.batch.request_counts)}`)
      }
      if (backend === "embedded") {
        const appended = rowCompletedAppendTimes(sluice.dataDir, created.id)
        const times = settled.map((s) => ({ ...s, appendedAt: appended.get(s.row) ?? Number.NaN }))
        if (times.some((s) => Number.isNaN(s.appendedAt))) throw new Error(`rows of ${created.id} settled with no row_completed in the log`)
        toLog.push(quantile(times.map((s) => s.appendedAt - s.completedAt), 0.5))
        fromLog.push(quantile(times.map((s) => s.arrivedWallMs - s.appendedAt), 0.5))
      }
      fromUpstream.p50.push(quantile(upstreamMs, 0.5))
      fromUpstream.p99.push(quantile(upstreamMs, 0.99))
      fromStored.p50.push(quantile(storedMs, 0.5))
      fromStored.p99.push(quantile(storedMs, 0.99))
      ctx.progress(
        `B15 ${backend} trial ${t + 1}: ${n} completions, upstream answer → consumer p50 ${fromUpstream.p50[t]!.toFixed(1)} ms, p99 ${fromUpstream.p99[t]!.toFixed(1)} ms, max ${Math.max(...upstreamMs).toFixed(1)} ms; ` +
          `completed_at → consumer p50 ${fromStored.p50[t]} ms, p99 ${fromStored.p99[t]} ms` +
          (backend === "embedded" ? ` (p50 completed_at → appended ${toLog[t]} ms, appended → consumer ${fromLog[t]} ms)` : "") +
          `; Sluice CPU ${cpu[t]!.toFixed(2)} ms a completion (${scrapes} scrapes at ${perScrape.toFixed(2)} ms taken off)`,
      )
    }
  } finally {
    api.close()
    scraper.destroy()
    await sluice.stop()
    await nats?.stop()
    await upstream.close()
  }
  const scenario = `${n} completions one at a time, a consumer waiting (wait_ms ${WAIT_MS}) after the newest`
  return [
    figure({ id: "B15", scenario, backend, figure: "upstream answer → waiting consumer's answer, p50 (ms)", samples: fromUpstream.p50, digits: 1 }),
    figure({ id: "B15", scenario, backend, figure: "upstream answer → waiting consumer's answer, p99 (ms)", samples: fromUpstream.p99, digits: 1 }),
    figure({ id: "B15", scenario, backend, figure: "completed_at → waiting consumer's answer, p50 (ms)", samples: fromStored.p50 }),
    figure({ id: "B15", scenario, backend, figure: "completed_at → waiting consumer's answer, p99 (ms)", samples: fromStored.p99 }),
    ...(backend === "embedded"
      ? [
          figure({ id: "B15", scenario, backend, figure: "completed_at → appended to the log, p50 (ms)", samples: toLog }),
          figure({ id: "B15", scenario, backend, figure: "appended to the log → waiting consumer's answer, p50 (ms)", samples: fromLog }),
        ]
      : []),
    figure({ id: "B15", scenario, backend, figure: "Sluice CPU ms a completion (its /metrics reads taken off)", samples: cpu, digits: 2 }),
  ]
}

export const b15FeedLatency: Scenario = {
  id: "B15",
  title: "the completion-events feed: a row's completion to a waiting consumer's answer",
  uses: [],
  run: async (ctx) => {
    const embedded = await measure(ctx, "embedded")
    const onNats = await measure(ctx, "nats")
    return {
      figures: [...embedded, ...onNats],
      notes: [
        `B15: on each log its own Sluice (on NATS its own nats-server) serves one model with one batch slot whose upstream is a server in the bench's process (test/support/gatedUpstream.ts) that holds each request until the bench answers it. Each trial creates a batch of ${WARMUP} + ${ctx.sizes.b15Completions} rows; the first ${WARMUP} are answered at once and the newest event's completion_id is the consumer's cursor. ` +
          `Then, for each row: once it is held at the upstream, the consumer sends GET /v1/responses/events?starting_after=<cursor>&wait_ms=${WAIT_MS}; once /metrics shows the call waiting (sluice_completion_feed_waiting), the row is answered, and the call must answer with exactly that row's event, whose completion_id is the next cursor. ` +
          "'upstream answer →' runs from the upstream's answer being written to the consumer having the whole page (both in the bench's process, performance.now()): Sluice receiving the answer, settling the row in the log, projecting it, waking the call and reading the page. 'completed_at →' runs from the event's completed_at (the row_completed event's at, Sluice's wall clock when the answer arrived, in whole ms) to the page's arrival (the bench's Date.now(), same machine); on the embedded log 'appended' is the time the log stored with the window holding row_completed (Date.now() as its append's transaction began, before the commit's fsync). " +
          `CPU is the Sluice process's (all threads, /proc) over the timed rows, less the loop's /metrics reads at their cost measured right after (${SCRAPES_TIMED} back to back), a completion.`,
      ],
    }
  },
}
