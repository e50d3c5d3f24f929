// @ts-check
// The thread that makes the models' batch calls (see upstreamThread.ts). Plain JavaScript: a worker's
// entry must load without a TypeScript loader, from the sources (tsx, vitest) and from dist/ alike.
import http from "node:http"
import https from "node:https"
import { parentPort } from "node:worker_threads"

/** @typedef {{ https: boolean, hostname: string, port?: number, path: string, auth?: string, apiKey?: string, maxSockets: number }} Target */
/** @typedef {{ id: number, target: number, body: string }} Call */
/** @typedef {{ targets?: Array<[number, Target]>, calls?: Array<Call>, aborts?: Array<number> }} ToWorker */

const port = parentPort
if (port === null) throw new Error("upstreamWorker.mjs runs as a worker thread")

/** @type {Map<number, { client: typeof http | typeof https, options: http.RequestOptions, apiKey?: string }>} */
const targets = new Map()
/** The calls not yet answered or aborted, with their request once it is sent. */
/** @type {Map<number, http.ClientRequest | null>} */
const live = new Map()

/** @param {string | undefined} header */
const retryAfterMs = (header) => {
  if (header === undefined) return undefined
  const seconds = Number(header)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(header)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

// Answers go back in one message per turn of the event loop: a message per answer cost the main
// thread more than the call itself.
/** @type {Array<[number, unknown]>} */
let answers = []
const flush = () => {
  const sent = answers
  answers = []
  port.postMessage(sent)
}
/** @param {number} id @param {unknown} outcome */
const answer = (id, outcome) => {
  // An aborted call's answer is not wanted: the main thread has settled it already.
  if (!live.delete(id)) return
  if (answers.length === 0) setImmediate(flush)
  answers.push([id, outcome])
}

/** @param {Call} call */
const send = (call) => {
  const target = targets.get(call.target)
  live.set(call.id, null)
  if (target === undefined) {
    answer(call.id, { _tag: "NetworkError", message: "The model server could not be reached: unknown upstream" })
    return
  }
  const payload = Buffer.from(call.body)
  const request = target.client.request(
    {
      ...target.options,
      headers: {
        "content-type": "application/json",
        "content-length": payload.length,
        ...(target.apiKey === undefined ? {} : { authorization: `Bearer ${target.apiKey}` }),
      },
    },
    (response) => {
      /** @type {Array<Buffer>} */
      const chunks = []
      response.on("data", (chunk) => chunks.push(chunk))
      response.on("error", (error) => answer(call.id, unreachable(error)))
      response.on("end", () => {
        if (!response.complete) {
          answer(call.id, { _tag: "NetworkError", message: "The model server closed the connection mid-response" })
          return
        }
        const status = response.statusCode ?? 0
        const text = Buffer.concat(chunks).toString("utf8")
        /** @type {unknown} */
        let body
        try {
          body = JSON.parse(text)
        } catch {
          if (status >= 200 && status < 300) {
            answer(call.id, { _tag: "NetworkError", message: "The model server sent an incomplete response" })
            return
          }
          body = text
        }
        const after = retryAfterMs(/** @type {string | undefined} */ (response.headers["retry-after"]))
        answer(call.id, after === undefined ? { _tag: "Response", status, body } : { _tag: "Response", status, body, retryAfterMs: after })
      })
    },
  )
  live.set(call.id, request)
  request.on("error", (error) => answer(call.id, unreachable(error)))
  request.end(payload)
}

/** @param {unknown} error */
const unreachable = (error) => ({
  _tag: "NetworkError",
  message: `The model server could not be reached: ${error instanceof Error ? error.message : String(error)}`,
})

port.on("message", (/** @type {ToWorker} */ message) => {
  for (const [index, t] of message.targets ?? []) {
    const agentOptions = { keepAlive: true, maxSockets: t.maxSockets }
    const client = t.https ? https : http
    targets.set(index, {
      client,
      apiKey: t.apiKey,
      options: {
        protocol: t.https ? "https:" : "http:",
        hostname: t.hostname,
        port: t.port,
        path: t.path,
        method: "POST",
        ...(t.auth === undefined ? {} : { auth: t.auth }),
        agent: t.https ? new https.Agent(agentOptions) : new http.Agent(agentOptions),
      },
    })
  }
  for (const id of message.aborts ?? []) {
    const request = live.get(id)
    live.delete(id)
    request?.destroy()
  }
  for (const call of message.calls ?? []) send(call)
})
