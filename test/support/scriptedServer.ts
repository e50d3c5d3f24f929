import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface SeenRequest {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

export type Reply = (res: ServerResponse, req: SeenRequest) => void

/**
 * A real HTTP server on loopback that answers the n-th request with the n-th reply (the last one
 * repeats), recording every request: for testing a client's own retry and streaming loops.
 */
export const startScriptedServer = async (replies: ReadonlyArray<Reply>) => {
  const seen: Array<SeenRequest> = []
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const request = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString() }
      seen.push(request)
      const reply = replies[Math.min(seen.length, replies.length) - 1]
      reply?.(res, request)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

export const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Reply =>
  (res) => {
    res.writeHead(status, { "content-type": "application/json", ...headers })
    res.end(JSON.stringify(body))
  }

export const apiError = (status: number, message: string, type = "server_error", code: string | null = null, headers: Record<string, string> = {}) =>
  json(status, { error: { message, type, param: null, code } }, headers)

/** Drops the connection without answering, after the request (body included) has arrived. */
export const reset: Reply = (res) => res.socket?.destroy()
