/**
 * Diagnostics behind the benchmark's figures, for profiling work: `npm run bench:probe -- cpu|slots [--nats]`.
 * - `cpu`: batches of 20,000 rows against a 0 ms simulator, one after another on one Sluice process;
 *   prints rows/s and the Sluice process's CPU time per row (from /proc), which moves less than rows/s
 *   with the machine's load. The first batches run before the JIT has warmed up.
 * - `slots`: one 20,000-row batch against a 50 ms simulator with 64 slots; reads the embedded log's
 *   own times to show where a slot's time goes: the span from a row's start to its settle, the appends'
 *   latency, and the utilization between the first start and the last settle.
 * - `reads`: a completed 20,000-row batch, then 3,000 reads of each kind B12's readers make (the batch, a
 *   results page of 100 walking its pages, the list of 20), 32 in flight; prints Sluice's CPU time per read, and
 *   the dispatch process's main thread's share of it (the fronts answer these reads).
 * - `deep`: one 20,000-row batch alone, then 20 batches of 10,000 rows sharing the 64 slots (B13's shape,
 *   smaller); prints Sluice's CPU time per completed row for each, which B13's ratio follows on a busy core.
 * - `threads`: batches of 20,000 rows against the minimal stub upstream (B2s's), after two to warm; prints
 *   each of the Sluice process's threads' and fronts' CPU time a row (from /proc/<pid>/task/<tid>/stat; the
 *   main thread is the dispatch thread), and its event loop's delay apart for each create (request to
 *   answer) and each run (answer to `completed`, polled every --poll ms, 25 by default, as B2s does), and the
 *   write calls and bytes the dispatch process made a row (from /proc/<pid>/io).
 * Add node flags for the Sluice process with BENCH_SLUICE_NODE_ARGS (e.g. --cpu-prof --cpu-prof-dir=DIR).
 */
import Database from "better-sqlite3"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { childPids, cpuMs, writes } from "./cpuTime.js"
import { scrapeLoopDelay } from "./loopDelay.js"
import { keepAliveAgent, request } from "./http.js"
import { BENCH_KEY, cleanupAll, cleanupOnSignals, freePort, MODELS, residentMb, startNats, startSim, startSluice, startStub } from "./processes.js"
import { accountsFor, UNFINISHED_PER_ACCOUNT } from "./accounts.js"
import { batchBody, smallRows } from "./rows.js"
import { completedRows } from "./scenarios/b13DeepQueue.js"
import { sluiceApi } from "./sluiceApi.js"

const ROWS = 20_000
const SLOTS = 64
const LATENCY_MS = 50

const { values, positionals } = parseArgs({
  options: { nats: { type: "boolean", default: false }, batches: { type: "string", default: "5" }, poll: { type: "string", default: "25" }, windows: { type: "string", default: "3" } },
  allowPositionals: true,
})
const which = positionals[0]
if (which !== "cpu" && which !== "slots" && which !== "reads" && which !== "deep" && which !== "threads") {
  console.error("usage: npm run bench:probe -- cpu [--nats] [--batches N] | slots | reads [--nats] | deep [--nats] | threads [--nats] [--batches N] [--poll MS]")
  process.exit(2)
}


/** Sluice with one 64-slot model on a 0 ms simulator, on NATS with --nats. */
const fastDeployment = async () => {
  const sim = await startSim(0, await freePort())
  const nats = values.nats ? await startNats() : undefined
  return startSluice({
    models: [{ id: MODELS.fast, upstream_url: sim.url, batch_concurrency: SLOTS }],
    ...(nats === undefined ? {} : { natsUrl: nats.url }),
  })
}

const cpu = async () => {
  const sluice = await fastDeployment()
  const api = sluiceApi(sluice.url)
  const body = batchBody(smallRows(ROWS, MODELS.fast))
  for (let i = 0; i < Number(values.batches); i++) {
    const created = await api.create(body)
    const before = cpuMs(sluice.pid)
    const done = await api.waitFinal(created.id, 25)
    const used = cpuMs(sluice.pid) - before
    const rowsPerSecond = ROWS / ((done.at - created.acceptedAt) / 1000)
    console.log(`batch ${i + 1}: ${rowsPerSecond.toFixed(0)} rows/s, ${((used * 1000) / ROWS).toFixed(0)} µs of CPU a row`)
  }
  api.close()
}

/** CPU ms of each thread of a process and of its children's (a front's threads summed), by name. */
const threadCpuMs = (pid: number) => {
  const ticks = (statPath: string) => {
    const fields = readFileSync(statPath, "utf8").split(") ")[1]!.split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10
  }
  const byThread = new Map<string, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      byThread.set(tid === String(pid) ? "main thread" : `thread ${tid}`, ticks(`/proc/${pid}/task/${tid}/stat`))
    } catch {
      // A thread that ended meanwhile.
    }
  }
  for (const child of childPids(pid)) {
    try {
      byThread.set(`front ${child}`, ticks(`/proc/${child}/stat`))
    } catch {
      // A front that ended meanwhile.
    }
  }
  return byThread
}

const threads = async () => {
  const stub = await startStub(await freePort())
  const nats = values.nats ? await startNats() : undefined
  const sluice = await startSluice({
    models: [{ id: MODELS.stub, upstream_url: stub.url, batch_concurrency: SLOTS }],
    ...(nats === undefined ? {} : { natsUrl: nats.url }),
  })
  const api = sluiceApi(sluice.url)
  const body = batchBody(smallRows(ROWS, MODELS.stub))
  for (let i = 0; i < 2; i++) await api.waitFinal((await api.create(body)).id, 25)
  const batches = Number(values.batches)
  const before = threadCpuMs(sluice.pid)
  const written0 = writes(sluice.pid)
  for (let i = 0; i < batches; i++) {
    await scrapeLoopDelay(sluice.url)
    const created = await api.create(body)
    const create = await scrapeLoopDelay(sluice.url)
    const done = await api.waitFinal(created.id, Number(values.poll))
    const run = await scrapeLoopDelay(sluice.url)
    console.log(
      `batch ${i + 1}: ${(ROWS / ((done.at - created.acceptedAt) / 1000)).toFixed(0)} rows/s; loop delay p99 / max, the create ` +
        `${create.p99Ms.toFixed(1)} / ${create.maxMs.toFixed(0)} ms, the run ${run.p99Ms.toFixed(1)} / ${run.maxMs.toFixed(0)} ms`,
    )
  }
  const after = threadCpuMs(sluice.pid)
  const written = writes(sluice.pid)
  console.log(`the dispatch process's writes: ${((written.calls - written0.calls) / (ROWS * batches)).toFixed(2)} calls and ${((written.bytes - written0.bytes) / (ROWS * batches)).toFixed(0)} bytes a row`)
  const perRow = [...after].map(([name, ms]) => [name, ((ms - (before.get(name) ?? 0)) * 1000) / (ROWS * batches)] as const)
  for (const [name, us] of perRow.filter(([, us]) => us >= 0.5).sort((a, b) => b[1] - a[1])) console.log(`${name}: ${us.toFixed(1)} µs of CPU a row`)
  console.log(`in all: ${perRow.reduce((sum, [, us]) => sum + us, 0).toFixed(1)} µs of CPU a row`)
  api.close()
}

const DEEP_BATCHES = 20
const DEEP_ROWS = 10_000

/** What the process spends from now on, a row: CPU (µs), and bytes and calls handed to writes. */
const spending = (pid: number) => {
  const cpu0 = cpuMs(pid)
  const written0 = writes(pid)
  return (rows: number) => {
    const written = writes(pid)
    const cpuUs = ((cpuMs(pid) - cpu0) * 1000) / rows
    return {
      cpuUs,
      text: `${cpuUs.toFixed(0)} µs of CPU a row, ${((written.bytes - written0.bytes) / rows).toFixed(0)} bytes and ${((written.calls - written0.calls) / rows).toFixed(1)} write calls a row`,
    }
  }
}

const deep = async () => {
  const sluice = await fastDeployment()
  const apis = await accountsFor(sluice.url, DEEP_BATCHES, "probe-deep")
  const alone: Array<number> = []
  for (let i = 0; i < 2; i++) {
    const created = await apis[0]!.create(batchBody(smallRows(ROWS, MODELS.fast)))
    const spent = spending(sluice.pid)
    const done = await apis[0]!.waitFinal(created.id, 25)
    const { cpuUs, text } = spent(ROWS)
    alone.push(cpuUs)
    console.log(`alone ${i + 1}: ${(ROWS / ((done.at - created.acceptedAt) / 1000)).toFixed(0)} rows/s, ${text}`)
    await apis[0]!.remove(created.id)
  }
  const body = batchBody(smallRows(DEEP_ROWS, MODELS.fast))
  for (let b = 0; b < DEEP_BATCHES; b++) await apis[Math.floor(b / UNFINISHED_PER_ACCOUNT)]!.create(body)
  const shared: Array<number> = []
  for (let w = 0; w < Number(values.windows); w++) {
    const rows0 = await completedRows(apis)
    const spent = spending(sluice.pid)
    const t0 = performance.now()
    await new Promise((r) => setTimeout(r, 5_000))
    const rows = (await completedRows(apis)) - rows0
    const { cpuUs, text } = spent(rows)
    shared.push(cpuUs)
    const rate = rows / ((performance.now() - t0) / 1000)
    console.log(`${DEEP_BATCHES} batches sharing the slots, 5 s: ${rate.toFixed(0)} rows/s, ${text}, RSS ${residentMb(sluice.pid).toFixed(0)} MB`)
  }
  console.log(`CPU a row alone ÷ shared: ${(Math.min(...alone) / Math.min(...shared)).toFixed(2)}`)
  for (const api of apis) api.close()
}

interface Stored {
  readonly subject: string
  readonly data: Buffer
  readonly time: number
}

const slots = async () => {
  const sim = await startSim(LATENCY_MS, await freePort())
  const sluice = await startSluice({ models: [{ id: MODELS.slow, upstream_url: sim.url, batch_concurrency: SLOTS }] })
  const api = sluiceApi(sluice.url)
  const created = await api.create(batchBody(smallRows(ROWS, MODELS.slow)))
  const answeredAt = Date.now()
  const done = await api.waitFinal(created.id, 25)
  api.close()
  const rowsPerSecond = ROWS / ((done.at - created.acceptedAt) / 1000)
  const db = new Database(join(sluice.dataDir, "log.sqlite"), { readonly: true })
  const startedAt = new Map<number, number>()
  const spans: Array<number> = []
  const startAppends: Array<number> = []
  const settleAppends: Array<number> = []
  let first = Number.POSITIVE_INFINITY
  let last = 0
  const rows = db.prepare("SELECT subject, data, time FROM messages WHERE subject LIKE ? ORDER BY seq").iterate(`batch.${created.id}.row_%`)
  for (const m of rows as Iterable<Stored>) {
    const event = JSON.parse(m.data.toString("utf8")) as { type: string; row: number; at: number }
    if (event.type === "row_started") {
      startedAt.set(event.row, event.at)
      first = Math.min(first, event.at)
      startAppends.push(m.time - event.at)
    } else if (event.type === "row_completed") {
      spans.push(event.at - startedAt.get(event.row)!)
      settleAppends.push(m.time - event.at)
      last = Math.max(last, event.at)
    }
  }
  db.close()
  spans.sort((a, b) => a - b)
  const at = (q: number) => spans[Math.floor(q * (spans.length - 1))]
  const mean = (xs: ReadonlyArray<number>) => (xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(2)
  const ideal = SLOTS / (LATENCY_MS / 1000)
  console.log(`${rowsPerSecond.toFixed(0)} rows/s: utilization ${(rowsPerSecond / ideal).toFixed(3)} of ${ideal} rows/s`)
  console.log(`first row started ${first - answeredAt} ms after the create's answer`)
  console.log(`utilization between the first start and the last settle: ${((ROWS * LATENCY_MS) / (SLOTS * (last - first))).toFixed(3)}`)
  console.log(`start to settle (ms): mean ${mean(spans)}, p50 ${at(0.5)}, p90 ${at(0.9)}, p99 ${at(0.99)}, max ${at(1)}`)
  console.log(`append latency (ms, decided to stored): start ${mean(startAppends)}, settle ${mean(settleAppends)}`)
}

const READS = 3_000
const IN_FLIGHT = 32

const reads = async () => {
  const sluice = await fastDeployment()
  const api = sluiceApi(sluice.url)
  const created = await api.create(batchBody(smallRows(ROWS, MODELS.fast)))
  await api.waitFinal(created.id, 25)
  api.close()
  const agent = keepAliveAgent(IN_FLIGHT)
  const headers = { authorization: `Bearer ${BENCH_KEY}` }
  let after: string | undefined
  const paths: Record<string, () => string> = {
    batch: () => `/v1/batches/${created.id}`,
    results: () => `/v1/batches/${created.id}/results?limit=100${after === undefined ? "" : `&after=${after}`}`,
    list: () => "/v1/batches?limit=20",
  }
  for (const [kind, path] of Object.entries(paths)) {
    for (let round = 0; round < 2; round++) {
      // The first round warms the JIT; the second is measured.
      const before = cpuMs(sluice.pid)
      const mainBefore = threadCpuMs(sluice.pid).get("main thread") ?? 0
      const t0 = performance.now()
      let left = READS
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (left-- > 0) {
            const reply = await request(agent, `${sluice.url}${path()}`, { headers })
            if (reply.status !== 200) throw new Error(`${kind}: ${reply.status} ${reply.body.toString().slice(0, 200)}`)
            if (kind === "results") {
              const page = JSON.parse(reply.body.toString("utf8")) as { has_more: boolean; last_id: string | null }
              after = page.has_more && page.last_id !== null ? page.last_id : undefined
            }
          }
        }),
      )
      const used = cpuMs(sluice.pid) - before
      const mainUsed = (threadCpuMs(sluice.pid).get("main thread") ?? 0) - mainBefore
      if (round === 1) {
        const seconds = (performance.now() - t0) / 1000
        console.log(
          `${kind}: ${((used * 1000) / READS).toFixed(0)} µs of CPU a read (the dispatch process's main thread ${((mainUsed * 1000) / READS).toFixed(0)}), ${(READS / seconds).toFixed(0)} reads/s`,
        )
      }
    }
  }
  agent.destroy()
}

cleanupOnSignals()
try {
  await (which === "cpu" ? cpu() : which === "reads" ? reads() : which === "deep" ? deep() : which === "threads" ? threads() : slots())
} finally {
  await cleanupAll()
}
