/**
 * The plain client (plainClient.ts) as its own process, `fork`ed by `startPlainClient` in processes.ts,
 * so that its CPU time is read from /proc apart from the bench driver's and Sluice's.
 * The parent sends `run`; the answer is the wall time and the process's CPU time over the calls alone.
 */
import { ownCpuMs } from "./cpuTime.js"
import { runPlainClient } from "./plainClient.js"
import { smallRows, upstreamBodies } from "./rows.js"

export interface PlainRun {
  readonly type: "run"
  readonly upstreamUrl: string
  readonly rows: number
  readonly model: string
  readonly concurrency: number
}

export interface PlainDone {
  readonly type: "done"
  readonly ms: number
  readonly cpuMs: number
}

process.on("message", (message: PlainRun) => {
  const bodies = upstreamBodies(smallRows(message.rows, message.model))
  const cpu0 = ownCpuMs(process.pid)
  void runPlainClient(message.upstreamUrl, bodies, message.concurrency).then((ms) =>
    process.send!({ type: "done", ms, cpuMs: ownCpuMs(process.pid) - cpu0 } satisfies PlainDone),
  )
})
process.send!({ type: "ready" })
