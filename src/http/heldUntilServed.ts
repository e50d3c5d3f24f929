import type { IncomingMessage, Server, ServerResponse } from "node:http"

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void

/**
 * The platform listens a few Effect steps before it installs its request handler, and a request that
 * arrives between would find no listener and never be answered. Until a handler is added, requests are
 * held; each is handed to the first handler added, in the order they came.
 */
export const heldUntilServed = (server: Server): Server => {
  const held: Array<[IncomingMessage, ServerResponse]> = []
  const hold: RequestListener = (request, response) => {
    held.push([request, response])
  }
  const served = (event: string | symbol, listener: unknown) => {
    if (event !== "request" || listener === hold) return
    server.off("newListener", served)
    server.off("request", hold)
    // Called before the handler is added: it is handed the held requests once it is in place.
    queueMicrotask(() => {
      for (const [request, response] of held.splice(0)) (listener as RequestListener).call(server, request, response)
    })
  }
  server.on("request", hold)
  server.on("newListener", served)
  return server
}
