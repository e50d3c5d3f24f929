/**
 * B12's readers, run as their own process (`fork`ed by `startReaders` in processes.ts) so that
 * their HTTP work and the bench driver's polling do not share one event loop.
 * The parent sends `warm` (every reader opens its keep-alive socket, unmeasured), then `start` with a
 * running batch, then `stop`; the answer is every request's latency.
 */
import type http from "node:http"
import { mulberry32 } from "../src/sim/Prng.js"
import { keepAliveAgent, request } from "./http.js"

export interface ReadersWarm {
  readonly type: "warm"
  readonly baseUrl: string
  readonly key: string
  readonly readers: number
}

export interface ReadersStart {
  readonly type: "start"
  readonly batchId: string
  readonly pauseMs: number
}

export type ReaderKind = "batch" | "results" | "list"

export interface ReadersDone {
  readonly type: "done"
  /** Milliseconds per request, by kind. */
  readonly latencies: Record<ReaderKind, Array<number>>
  readonly errors: number
  readonly firstError: string | undefined
  readonly seconds: number
}

const KINDS: ReadonlyArray<ReaderKind> = ["batch", "results", "list"]
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

let warmed: (ReadersWarm & { readonly agent: http.Agent }) | undefined

const warm = async (message: ReadersWarm): Promise<void> => {
  warmed?.agent.destroy()
  const agent = keepAliveAgent(message.readers)
  warmed = { ...message, agent }
  const headers = { authorization: `Bearer ${message.key}` }
  await Promise.all(Array.from({ length: message.readers }, () => request(agent, `${message.baseUrl}/v1/batches?limit=1`, { headers })))
}

const run = async (start: ReadersStart, stopped: () => boolean): Promise<ReadersDone> => {
  if (warmed === undefined) throw new Error("start before warm")
  const { agent, baseUrl, key, readers } = warmed
  const headers = { authorization: `Bearer ${key}` }
  const latencies: Record<ReaderKind, Array<number>> = { batch: [], results: [], list: [] }
  let errors = 0
  let firstError: string | undefined
  const random = mulberry32(12)
  const reader = async (i: number) => {
    const kind = KINDS[i % KINDS.length]!
    // A results reader walks the batch's pages of 100 from the start, again and again.
    let after: string | undefined
    if (start.pauseMs > 0) await sleep(random() * start.pauseMs)
    while (!stopped()) {
      const path =
        kind === "batch"
          ? `/v1/batches/${start.batchId}`
          : kind === "results"
            ? `/v1/batches/${start.batchId}/results?limit=100${after === undefined ? "" : `&after=${after}`}`
            : "/v1/batches?limit=20"
      const t0 = performance.now()
      let failure: string | undefined
      try {
        const reply = await request(agent, `${baseUrl}${path}`, { headers })
        latencies[kind].push(performance.now() - t0)
        if (reply.status >= 400) failure = `GET ${path}: ${reply.status} ${reply.body.toString().slice(0, 200)}`
        else if (kind === "results") {
          const page = JSON.parse(reply.body.toString("utf8")) as { has_more: boolean; last_id: string | null }
          after = page.has_more && page.last_id !== null ? page.last_id : undefined
        }
      } catch (error) {
        latencies[kind].push(performance.now() - t0)
        failure = error instanceof Error ? error.message : String(error)
      }
      if (failure !== undefined) {
        errors++
        firstError ??= failure
      }
      // A pause of 0 is a closed loop: the next request leaves as soon as the last is answered.
      if (start.pauseMs > 0) await sleep(start.pauseMs)
    }
  }
  const t0 = performance.now()
  await Promise.all(Array.from({ length: readers }, (_, i) => reader(i)))
  agent.destroy()
  warmed = undefined
  return { type: "done", latencies, errors, firstError, seconds: (performance.now() - t0) / 1000 }
}

let stop = false
process.on("message", (message: ReadersWarm | ReadersStart | { readonly type: "stop" }) => {
  if (message.type === "stop") stop = true
  else if (message.type === "warm") void warm(message).then(() => process.send!({ type: "warm" }))
  else {
    stop = false
    void run(message, () => stop).then((done) => process.send!(done))
  }
})
process.send!({ type: "ready" })
