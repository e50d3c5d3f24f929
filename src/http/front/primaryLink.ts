import type { FrontAsk, FrontReply, FrontServed, FromFront, ToFront } from "./protocol.js"

type Unnumbered = FrontAsk extends infer A ? (A extends { id: number } ? Omit<A, "id"> : never) : never
type Served = FrontServed["reads"][number]

/**
 * How often the reads a front served are told to the dispatch process, which counts them in its request
 * metrics: a message each turn of this loop, under many readers, cost that process's loop 3 to 27 µs a
 * read (the message's parse and its wake), for figures a scrape reads every few seconds.
 */
const SERVED_EVERY_MS = 100

/**
 * The front's side of the IPC channel to the dispatch process: the asks of one turn of this loop go in
 * one message (a message each was most of what a read cost the dispatch process), the reads it served
 * in one message every SERVED_EVERY_MS. If the channel closes, what waits is answered "not ok", so the
 * request is handed on and fails there like any request to a stopped server.
 */
export const primaryLink = () => {
  const waiting = new Map<number, (reply: FrontReply) => void>()
  let next = 0
  let asks: Array<FrontAsk> = []
  let served: Array<Served> = []
  // Unknown until the dispatch process first says: reads ask it meanwhile.
  let logUp: boolean | undefined
  const send = (message: FromFront) => {
    if (process.connected) process.send!(message)
  }
  const flushAsks = () => {
    if (asks.length > 0) send({ t: "asks", asks })
    asks = []
  }
  const flushServed = () => {
    if (served.length > 0) send({ t: "served", reads: served })
    served = []
  }
  // Told before the front exits (process.exit runs no timer).
  process.on("exit", flushServed)
  process.on("message", (message: ToFront) => {
    if (message.t === "standing") logUp = message.logUp
    if (message.t !== "replies") return
    for (const reply of message.replies) {
      const resolve = waiting.get(reply.id)
      waiting.delete(reply.id)
      resolve?.(reply)
    }
  })
  process.on("disconnect", () => {
    logUp = undefined
    for (const [id, resolve] of waiting) resolve({ t: "reply", id, ok: false })
    waiting.clear()
  })
  const ask = (question: Unnumbered): Promise<FrontReply> =>
    new Promise((resolve) => {
      const id = next++
      if (!process.connected) return resolve({ t: "reply", id, ok: false })
      waiting.set(id, resolve)
      asks.push({ ...question, id } as FrontAsk)
      if (asks.length === 1) setImmediate(flushAsks)
    })
  const tellServed = (read: Served) => {
    served.push(read)
    if (served.length === 1) setTimeout(flushServed, SERVED_EVERY_MS).unref()
  }
  return { ask, tellServed, tell: send, logUp: () => logUp }
}
