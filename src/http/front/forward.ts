import { type IncomingMessage, type ServerResponse, Agent, request } from "node:http"
import { KEEP_ALIVE_MS } from "../connectionTimes.js"

// Hop-by-hop headers: each connection has its own.
const hopByHop = new Set(["connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"])

const envelope = JSON.stringify({
  error: { message: "The server is stopping or restarting: try again shortly", type: "server_error", param: null, code: "service_unavailable" },
})

/**
 * Hands a request to the dispatch process's server on its private socket and streams its answer
 * back, both ways with backpressure: uploads, results streams and event streams pass through as they
 * come. A client that goes away ends the request there too.
 */
export const forwarder = (socketPath: string) => {
  // No cap on sockets (Node's default): each event stream a client holds open keeps one, and a cap would
  // leave every request beyond it waiting for a stream to end. An idle socket is closed here 5 s before
  // the dispatch process's server would close it: a request sent on a socket the server is closing
  // would be reset. (Node's agent takes the server's Keep-Alive hint only below a timeout of its own.)
  const agent = new Agent({ keepAlive: true, timeout: KEEP_ALIVE_MS - 5_000 })
  return (req: IncomingMessage, res: ServerResponse) => {
    const headers: Record<string, string | Array<string>> = {}
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !hopByHop.has(name)) headers[name] = value
    }
    const upstream = request({ socketPath, agent, method: req.method, path: req.url, headers }, (answer) => {
      const answerHeaders: Record<string, string | Array<string>> = {}
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value !== undefined && !hopByHop.has(name)) answerHeaders[name] = value
      }
      res.writeHead(answer.statusCode ?? 502, answerHeaders)
      // Event streams send their first bytes when there is something to say: the client has the headers now.
      if (answer.headers["content-length"] === undefined) res.flushHeaders()
      answer.pipe(res)
      answer.on("error", () => res.destroy())
    })
    upstream.on("error", (e: NodeJS.ErrnoException) => {
      // Not reached: nothing was done, and the client may try again. Reached and then lost (the dispatch
      // process stopped or was killed meanwhile): what it did is not known, so the client's connection
      // ends unanswered, as it would had it been talking to that process itself.
      const notReached = e.code === "ECONNREFUSED" || e.code === "ENOENT"
      if (res.headersSent || !notReached) return void res.destroy()
      res.writeHead(503, { "content-type": "application/json", "retry-after": "1" }).end(envelope)
    })
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy()
    })
    req.pipe(upstream)
  }
}
