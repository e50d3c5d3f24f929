import type { FrontAsk, FrontReply, FromFront } from "./protocol.js"

type Unnumbered = FrontAsk extends infer A ? (A extends { id: number } ? Omit<A, "id"> : never) : never

/**
 * The front's side of the IPC channel to the dispatch process: asks numbered and answered in any
 * order. If the channel closes, what waits is answered "not ok", so the request is handed on and
 * fails there like any request to a stopped server.
 */
export const primaryLink = () => {
  const waiting = new Map<number, (reply: FrontReply) => void>()
  let next = 0
  process.on("message", (message: FrontReply | { t: string }) => {
    if (message.t !== "reply") return
    const reply = message as FrontReply
    const resolve = waiting.get(reply.id)
    waiting.delete(reply.id)
    resolve?.(reply)
  })
  process.on("disconnect", () => {
    for (const [id, resolve] of waiting) resolve({ t: "reply", id, ok: false })
    waiting.clear()
  })
  const tell = (message: FromFront) => {
    if (process.connected) process.send!(message)
  }
  const ask = (question: Unnumbered): Promise<FrontReply> =>
    new Promise((resolve) => {
      const id = next++
      if (!process.connected) return resolve({ t: "reply", id, ok: false })
      waiting.set(id, resolve)
      process.send!({ ...question, id })
    })
  return { ask, tell }
}
