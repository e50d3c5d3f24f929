import { type BatchStatus, FinalBatchStatuses } from "../src/domain/api/BatchStatus.js"
import { keepAliveAgent, type Reply, request } from "./http.js"
import { BENCH_KEY } from "./processes.js"

export interface BatchView {
  readonly id: string
  readonly status: BatchStatus
  readonly request_counts: { readonly total: number; readonly completed: number; readonly failed: number }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export interface Created {
  readonly id: string
  /** performance.now() when the request was sent and when the answer had fully arrived. */
  readonly sentAt: number
  readonly acceptedAt: number
  /** Date.now() when the request was sent: comparable with the `at` times Sluice writes in its log. */
  readonly sentWallMs: number
}

/** The batch API of one Sluice process, over a keep-alive node:http pool. */
export const sluiceApi = (baseUrl: string, key = BENCH_KEY) => {
  const agent = keepAliveAgent(32)
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
  const send = (method: string, path: string, body?: Buffer | string) =>
    request(agent, `${baseUrl}${path}`, { method, headers, ...(body === undefined ? {} : { body }) })
  const call = async (method: string, path: string, body?: Buffer | string): Promise<Reply> => {
    // A keep-alive socket the server closed while this process was busy fails the next request
    // sent on it; a read is safe to send again.
    const reply = await send(method, path, body).catch((error: NodeJS.ErrnoException) => {
      if (method !== "GET" || (error.code !== "ECONNRESET" && error.message !== "socket hang up")) throw error
      return send(method, path, body)
    })
    if (reply.status >= 400) throw new Error(`${method} ${path}: ${reply.status} ${reply.body.toString().slice(0, 500)}`)
    return reply
  }
  const json = async <A>(method: string, path: string, body?: Buffer | string): Promise<A> =>
    JSON.parse((await call(method, path, body)).body.toString("utf8")) as A

  const get = (id: string) => json<BatchView>("GET", `/v1/batches/${id}`)

  const waitUntil = async (id: string, done: (b: BatchView) => boolean, pollMs: number, timeoutMs = 600_000) => {
    const deadline = performance.now() + timeoutMs
    for (;;) {
      const batch = await get(id)
      if (done(batch)) return { batch, at: performance.now() }
      if (performance.now() > deadline) throw new Error(`batch ${id} still ${batch.status} after ${timeoutMs / 1000} s`)
      await sleep(pollMs)
    }
  }

  return {
    call,
    create: async (body: Buffer | string): Promise<Created> => {
      const sentWallMs = Date.now()
      const sentAt = performance.now()
      const { id } = await json<{ id: string }>("POST", "/v1/batches", body)
      return { id, sentAt, acceptedAt: performance.now(), sentWallMs }
    },
    get,
    /** Polls until the batch is final; `at` is performance.now() when that was seen. */
    waitFinal: (id: string, pollMs = 50, timeoutMs?: number) => waitUntil(id, (b) => FinalBatchStatuses.has(b.status), pollMs, timeoutMs),
    waitUntil,
    cancel: (id: string) => json<BatchView>("POST", `/v1/batches/${id}/cancel`),
    remove: (id: string) => call("DELETE", `/v1/batches/${id}`),
    /** Cancels the batch, waits for it to settle and deletes it, so it neither runs nor counts as unfinished. */
    discard: async (id: string) => {
      await json<BatchView>("POST", `/v1/batches/${id}/cancel`)
      await waitUntil(id, (b) => FinalBatchStatuses.has(b.status), 100)
      await call("DELETE", `/v1/batches/${id}`)
    },
    close: () => agent.destroy(),
  }
}

export type SluiceApi = ReturnType<typeof sluiceApi>
