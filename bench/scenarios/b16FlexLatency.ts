import type { Context } from "../context.js"
import { cpuMs } from "../cpuTime.js"
import { type Backend, type Figure, figure } from "../figures.js"
import { MODELS } from "../processes.js"
import type { Scenario } from "../scenario.js"
import type { SluiceApi } from "../sluiceApi.js"
import { quantile } from "../stats.js"

/** Requests of one kind sent in a row, the kinds taking turns, so a drift of the machine's speed favours neither. */
const BLOCK = 50
/** Before each block: a flex request's last projections and timers finish outside the next block's CPU time. */
const SETTLE_MS = 250

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const WARMUP = 50

type Kind = "interactive" | "flex"

const bodyOf = (kind: Kind) =>
  JSON.stringify({
    model: MODELS.fast,
    messages: [{ role: "user", content: "question 1" }],
    max_tokens: 8,
    ...(kind === "flex" ? { service_tier: "flex" } : {}),
  })

/** One chat completion, timed from sending to the whole answer; the answer must say which tier served it. */
const send = async (api: SluiceApi, kind: Kind, body: string): Promise<number> => {
  const t0 = performance.now()
  const reply = await api.call("POST", "/v1/chat/completions", body)
  const ms = performance.now() - t0
  const answer = JSON.parse(reply.body.toString("utf8")) as { service_tier?: unknown; choices?: ReadonlyArray<unknown> }
  if ((answer.service_tier === "flex") !== (kind === "flex") || (answer.choices?.length ?? 0) === 0) {
    throw new Error(`a ${kind} request was answered ${reply.body.toString("utf8").slice(0, 300)}`)
  }
  return ms
}

const measure = async (ctx: Context, backend: Backend, api: SluiceApi, pid: number): Promise<Array<Figure>> => {
  const { b16Requests: n, trials } = ctx.sizes
  const bodies = { interactive: bodyOf("interactive"), flex: bodyOf("flex") }
  for (let i = 0; i < WARMUP; i++) for (const kind of ["interactive", "flex"] as const) await send(api, kind, bodies[kind])
  const out = {
    interactive: { p50: [] as Array<number>, p99: [] as Array<number>, cpu: [] as Array<number> },
    flex: { p50: [] as Array<number>, p99: [] as Array<number>, cpu: [] as Array<number> },
  }
  for (let t = 0; t < trials; t++) {
    const ms = { interactive: [] as Array<number>, flex: [] as Array<number> }
    const cpu = { interactive: 0, flex: 0 }
    for (let round = 0; ms.flex.length < n; round++) {
      const order: ReadonlyArray<Kind> = round % 2 === 0 ? ["interactive", "flex"] : ["flex", "interactive"]
      for (const kind of order) {
        await sleep(SETTLE_MS)
        const before = cpuMs(pid)
        for (let i = 0; i < BLOCK && ms[kind].length < n; i++) ms[kind].push(await send(api, kind, bodies[kind]))
        cpu[kind] += cpuMs(pid) - before
      }
    }
    for (const kind of ["interactive", "flex"] as const) {
      out[kind].p50.push(quantile(ms[kind], 0.5))
      out[kind].p99.push(quantile(ms[kind], 0.99))
      out[kind].cpu.push(cpu[kind] / n)
    }
    ctx.progress(
      `B16 ${backend} trial ${t + 1}: interactive p50 ${out.interactive.p50[t]!.toFixed(1)} ms, p99 ${out.interactive.p99[t]!.toFixed(1)} ms, CPU ${out.interactive.cpu[t]!.toFixed(2)} ms; ` +
        `flex p50 ${out.flex.p50[t]!.toFixed(1)} ms, p99 ${out.flex.p99[t]!.toFixed(1)} ms, CPU ${out.flex.cpu[t]!.toFixed(2)} ms`,
    )
  }
  const added = (q: "p50" | "p99") => out.flex[q].map((f, i) => f - out.interactive[q][i]!)
  const scenario = `${n} flex and ${n} interactive chat completions, one at a time, ${MODELS.fast} idle (sim 0 ms)`
  return [
    figure({ id: "B16", scenario, backend, figure: "interactive p50 (ms)", samples: out.interactive.p50, digits: 1 }),
    figure({ id: "B16", scenario, backend, figure: "interactive p99 (ms)", samples: out.interactive.p99, digits: 1 }),
    figure({ id: "B16", scenario, backend, figure: "flex's added p50: flex p50 − interactive p50 (ms)", samples: added("p50"), digits: 1 }),
    figure({ id: "B16", scenario, backend, figure: "flex's added p99: flex p99 − interactive p99 (ms)", samples: added("p99"), digits: 1 }),
    figure({ id: "B16", scenario, backend, figure: "Sluice CPU ms an interactive request", samples: out.interactive.cpu, digits: 2 }),
    figure({ id: "B16", scenario, backend, figure: "Sluice CPU ms a flex request", samples: out.flex.cpu, digits: 2 }),
  ]
}

/** On the shared Sluice processes, between scenarios: no batch runs, so a flex request finds a slot free at once. */
export const b16FlexLatency: Scenario = {
  id: "B16",
  title: "a flex request's added latency over an interactive one on an idle model",
  uses: ["main", "nats"],
  run: async (ctx) => {
    const main = await ctx.sluice("main")
    const embedded = await measure(ctx, "embedded", main.api, main.sluice.pid)
    const nats = await ctx.sluice("nats")
    const onNats = await measure(ctx, "nats", nats.api, nats.sluice.pid)
    return {
      figures: [...embedded, ...onNats],
      notes: [
        `B16: the shared Sluice of each log, its ${MODELS.fast} model (${ctx.sizes.slots} batch slots, the 0 ms simulator) idle. After ${WARMUP} unmeasured requests of each kind, each trial sends ${ctx.sizes.b16Requests} of each, one at a time, in blocks of ${BLOCK} of one kind, each after a ${SETTLE_MS} ms pause, the kinds taking turns (odd rounds flex first); the same body, the flex one with service_tier "flex" added (default max_queue_wait_s), and each answer must carry service_tier "flex" exactly when asked. ` +
          "Latency is from sending the request to having its whole answer (node:http keep-alive). The added p50 and p99 are the flex quantile less the interactive one of the same trial. A flex request is queued as a one-row batch and answered when its row is final, so its added time is the log's writes (the response's batch, the row's start and settle) and the wait for the projections that settle it; CPU is the Sluice process's (all threads, /proc) over each kind's blocks, a request.",
      ],
    }
  },
}
