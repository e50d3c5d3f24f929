import { fork } from "node:child_process"
import { readFileSync } from "node:fs"
import { Worker } from "node:worker_threads"
import type { Context } from "../context.js"
import { type Figure, figure } from "../figures.js"
import type { Scenario } from "../scenario.js"

const PEER = new URL("../transportPeer.mjs", import.meta.url)
const IN_FLIGHT = 64

/** User plus system CPU of the calling thread, ms (clock ticks of 10 ms). */
const threadCpuMs = () => {
  const fields = readFileSync("/proc/thread-self/stat", "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** A call as the HTTP side would send one to the actors: a command with a body of about 1 KB. */
const call = (id: number) => ({
  type: "call",
  id,
  service: "BatchWriter",
  method: "execute",
  args: [`batch_${id}`, { type: "CancelBatch", at: 1_764_720_000_000 + id, reason: "y".repeat(900) }],
})

interface Peer {
  readonly send: (message: unknown) => void
  readonly onMessage: (handler: (message: { type: string; id?: number; cpuMs?: number }) => void) => void
  readonly close: () => Promise<void>
}

const threadPeer = (): Peer => {
  const worker = new Worker(PEER)
  return {
    send: (m) => worker.postMessage(m),
    onMessage: (h) => worker.on("message", h),
    close: () => worker.terminate().then(() => undefined),
  }
}

const processPeer = (serialization: "json" | "advanced"): Peer => {
  const child = fork(PEER, { serialization, execArgv: [], stdio: ["ignore", "inherit", "inherit", "ipc"] })
  return {
    send: (m) => child.send(m as object),
    onMessage: (h) => child.on("message", h as (m: unknown) => void),
    close: () =>
      new Promise((resolve) => {
        child.once("exit", () => resolve())
        child.send({ type: "exit" })
      }),
  }
}

/** `calls` round trips, IN_FLIGHT at a time: calls a second, and each side's CPU µs a call (its own thread). */
const measure = async (peer: Peer, calls: number) => {
  let handler: (m: { type: string; id?: number; cpuMs?: number }) => void = () => {}
  peer.onMessage((m) => handler(m))
  const next = (type: string) => new Promise<{ cpuMs?: number }>((resolve) => (handler = (m) => m.type === type && resolve(m)))
  const round = (n: number) =>
    new Promise<void>((resolve) => {
      let sent = 0
      let answered = 0
      handler = (m) => {
        if (m.type !== "answer") return
        if (++answered === n) resolve()
        else if (sent < n) peer.send(call(sent++))
      }
      while (sent < Math.min(IN_FLIGHT, n)) peer.send(call(sent++))
    })
  await round(Math.min(2_000, calls)) // warm both sides
  const started = next("started")
  peer.send({ type: "start" })
  await started
  const cpuBefore = threadCpuMs()
  const t0 = performance.now()
  await round(calls)
  const seconds = (performance.now() - t0) / 1000
  const httpSideMs = threadCpuMs() - cpuBefore
  const stopped = next("stopped")
  peer.send({ type: "stop" })
  const actorSideMs = (await stopped).cpuMs!
  await peer.close()
  return { perSecond: calls / seconds, httpUs: (httpSideMs * 1000) / calls, actorUs: (actorSideMs * 1000) / calls }
}

/**
 * What a call from an HTTP side to the actors' side costs, by the transport issue 29's split could use:
 * a worker thread's MessagePort (structured clone) or a forked process's IPC channel (JSON, or V8's
 * serializer). The actors' side's CPU a call is what forwarding every command takes from dispatch.
 */
export const b19Transport: Scenario = {
  id: "B19",
  title: "a call between an HTTP side and the actors' side: worker thread or process (issue 29's choice)",
  uses: [],
  run: async (ctx: Context) => {
    const calls = ctx.quick ? 5_000 : 100_000
    const kinds = [
      ["worker thread, MessagePort", () => threadPeer()],
      ["process, IPC as JSON", () => processPeer("json")],
      ["process, IPC with V8's serializer", () => processPeer("advanced")],
    ] as const
    const samples = new Map(kinds.map(([name]) => [name, { perSecond: [] as Array<number>, httpUs: [] as Array<number>, actorUs: [] as Array<number> }]))
    for (let t = 0; t < ctx.sizes.trials; t++) {
      for (const [name, make] of kinds) {
        const m = await measure(make(), calls)
        const into = samples.get(name)!
        into.perSecond.push(m.perSecond)
        into.httpUs.push(m.httpUs)
        into.actorUs.push(m.actorUs)
        ctx.progress(`B19 trial ${t + 1} ${name}: ${m.perSecond.toFixed(0)} calls/s, ${m.httpUs.toFixed(1)} µs HTTP side, ${m.actorUs.toFixed(1)} µs actors' side a call`)
      }
    }
    const scenario = `${calls.toLocaleString("en")} calls of ~1 KB answered with ~1.5 KB, ${IN_FLIGHT} in flight`
    const figures: Array<Figure> = []
    for (const [name] of kinds) {
      const s = samples.get(name)!
      figures.push(
        figure({ id: "B19", scenario: `${scenario}, ${name}`, backend: "-", figure: "calls/s", samples: s.perSecond }),
        figure({ id: "B19", scenario: `${scenario}, ${name}`, backend: "-", figure: "actors' side CPU µs a call", samples: s.actorUs, digits: 1 }),
        figure({ id: "B19", scenario: `${scenario}, ${name}`, backend: "-", figure: "HTTP side CPU µs a call", samples: s.httpUs, digits: 1 }),
      )
    }
    return {
      figures,
      notes: [
        "B19: each side's CPU is its own thread's (/proc/thread-self/stat, 10 ms ticks), so a worker thread's figures do not include the other's; calls go out 64 at a time as a busy HTTP side would send them.",
      ],
    }
  },
}
