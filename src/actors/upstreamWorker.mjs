// @ts-check
// The thread that makes the models' batch calls (see upstreamThread.ts). Plain JavaScript: a worker's
// entry must load without a TypeScript loader, from the sources (tsx, vitest) and from dist/ alike.
import { parentPort } from "node:worker_threads"
import { Pool } from "undici"

/** @typedef {{ https: boolean, hostname: string, port?: number, path: string, auth?: string, apiKey?: string, maxSockets: number }} Target */
/** @typedef {{ id: number, target: number, body: string, notAfter?: number, path?: string }} Call */
/** @typedef {{ targets?: Array<[number, Target]>, calls?: Array<Call>, aborts?: Array<number>, limits?: Array<[number, number]> }} ToWorker */
/** @typedef {{ limit: number, running: number, held: Array<Call> }} Lane */

const port = parentPort
if (port === null) throw new Error("upstreamWorker.mjs runs as a worker thread")

// undici's dispatch with a handler, not node:http: a call costs about a third less CPU (no request object,
// stream or promise per call; docs/performance.md).
/** @type {Map<number, { pool: Pool, path: string, headers: Array<string> }>} */
const targets = new Map()
/** The calls not yet answered or aborted, with the abort of their request once it is sent. */
/** @type {Map<number, { abort: ((error: Error) => void) | undefined, aborted: boolean } | null>} */
const live = new Map()

// A target's calls beyond its limit wait here, and the answer that frees a slot sends the next one
// at once, without a turn through the main thread. The main thread sets the limit (the model's batch
// slots) and sends at most a few calls more than it.
/** @type {Map<number, Lane>} */
const lanes = new Map()
/** The lane of each call that holds one of its slots. */
/** @type {Map<number, Lane>} */
const sentOn = new Map()
/** @param {number} target */
const laneOf = (target) => {
  let lane = lanes.get(target)
  if (lane === undefined) lanes.set(target, (lane = { limit: Number.POSITIVE_INFINITY, running: 0, held: [] }))
  return lane
}
/** @param {Lane} lane */
const sendHeld = (lane) => {
  while (lane.running < lane.limit && lane.held.length > 0) {
    const call = /** @type {Call} */ (lane.held.shift())
    if (!pending()) setImmediate(flush)
    if (lapsed(call)) continue
    launched.push(call.id)
    launch(call, lane)
  }
}
/**
 * A call whose lease has lapsed since it was started (the process was paused between the start and
 * its sending: on its way here, or held here for a slot) is answered as not sent: another owner may run
 * the model by now. Checked again when a held call gets its slot, since answers that waited out the
 * pause free slots here before the main thread learns the lease is gone.
 * @param {Call} call
 */
const lapsed = (call) => {
  if (call.notAfter === undefined || Date.now() <= call.notAfter) return false
  answer(call.id, { _tag: "NetworkError", message: "The call was not sent: the model's lease lapsed before it could be" })
  return true
}
/** @param {number} id */
const freeSlot = (id) => {
  const lane = sentOn.get(id)
  if (lane === undefined) return
  sentOn.delete(id)
  lane.running--
  sendHeld(lane)
}

// Answers go back in one message per turn of the event loop: a message per answer cost the main
// thread more than the call itself. The message also names the calls that were held and have been
// sent since, and those held on arrival: a call's timeout runs from when it is sent.
/** @type {Array<[number, unknown]>} */
let answers = []
/** @type {Array<number>} */
let launched = []
/** @type {Array<number>} */
let held = []
const flush = () => {
  const message = { answers, launched, held }
  answers = []
  launched = []
  held = []
  port.postMessage(message)
}
const pending = () => answers.length + launched.length + held.length > 0
/** @param {number} id @param {unknown} outcome */
const answer = (id, outcome) => {
  freeSlot(id)
  // An aborted call's answer is not wanted: the main thread has settled it already.
  if (!live.delete(id)) return
  if (!pending()) setImmediate(flush)
  answers.push([id, outcome])
}

/** @param {Call} call */
const send = (call) => {
  live.set(call.id, null)
  if (lapsed(call)) return
  const lane = laneOf(call.target)
  if (lane.running < lane.limit) return launch(call, lane)
  if (!pending()) setImmediate(flush)
  held.push(call.id)
  lane.held.push(call)
}

/** @param {Call} call @param {Lane} lane */
const launch = (call, lane) => {
  const target = targets.get(call.target)
  lane.running++
  sentOn.set(call.id, lane)
  if (target === undefined) {
    answer(call.id, { _tag: "NetworkError", message: "The model server could not be reached: unknown upstream" })
    return
  }
  /** @type {{ abort: ((error: Error) => void) | undefined, aborted: boolean }} */
  const request = { abort: undefined, aborted: false }
  live.set(call.id, request)
  /** @type {Array<Buffer>} */
  const chunks = []
  let status = 0
  /** @type {string | undefined} */
  let retryAfter
  let responding = false
  target.pool.dispatch(
    {
      // A call to another path of the target's server (an embeddings row's); the target's own otherwise.
      path: call.path ?? target.path,
      method: "POST",
      // undici sends the body's content-length itself.
      headers: target.headers,
      body: call.body,
    },
    {
      onRequestStart: (controller) => {
        request.abort = (error) => controller.abort(error)
        if (request.aborted) controller.abort(new Error("aborted"))
      },
      onResponseStart: (_controller, statusCode, headers) => {
        responding = true
        status = statusCode
        const after = headers["retry-after"]
        retryAfter = Array.isArray(after) ? after[0] : after
      },
      onResponseData: (_controller, chunk) => {
        chunks.push(chunk)
      },
      onResponseEnd: () => {
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
        // The main thread reads Retry-After, with the domain's parser (this file is plain JavaScript).
        answer(call.id, retryAfter === undefined ? { _tag: "Response", status, body } : { _tag: "Response", status, body, retryAfter })
      },
      onResponseError: (_controller, error) => {
        answer(
          call.id,
          responding ? { _tag: "NetworkError", message: "The model server closed the connection mid-response" } : unreachable(error),
        )
      },
    },
  )
}

/** @param {unknown} error */
const unreachable = (error) => ({
  _tag: "NetworkError",
  message: `The model server could not be reached: ${error instanceof Error ? error.message : String(error)}`,
})

port.on("message", (/** @type {ToWorker} */ message) => {
  for (const [index, t] of message.targets ?? []) {
    const host = t.hostname.includes(":") ? `[${t.hostname}]` : t.hostname
    const origin = `${t.https ? "https" : "http"}://${host}${t.port === undefined ? "" : `:${t.port}`}`
    // An API key is the bearer; otherwise the URL's user and password, as basic auth.
    const authorization =
      t.apiKey !== undefined ? `Bearer ${t.apiKey}` : t.auth !== undefined ? `Basic ${Buffer.from(t.auth).toString("base64")}` : undefined
    targets.set(index, {
      // The main thread times each call out (upstreamCall.ts): the pool's own timeouts are off.
      pool: new Pool(origin, { connections: t.maxSockets, headersTimeout: 0, bodyTimeout: 0 }),
      path: t.path,
      headers: ["content-type", "application/json", ...(authorization === undefined ? [] : ["authorization", authorization])],
    })
  }
  for (const [target, limit] of message.limits ?? []) {
    const lane = laneOf(target)
    lane.limit = limit
    sendHeld(lane)
  }
  for (const id of message.aborts ?? []) {
    const request = live.get(id)
    live.delete(id)
    if (request === null) {
      for (const lane of lanes.values()) {
        const at = lane.held.findIndex((call) => call.id === id)
        if (at !== -1) lane.held.splice(at, 1)
      }
    }
    // Its slot is free now: the aborted request's own events may come later, or not at all.
    freeSlot(id)
    if (request !== null && request !== undefined) {
      request.aborted = true
      request.abort?.(new Error("aborted"))
    }
  }
  for (const call of message.calls ?? []) send(call)
})
