import Database from "better-sqlite3"
import { Effect } from "effect"
import cluster from "node:cluster"
import { createServer } from "node:http"
import { SluiceConfig } from "../../config/Config.js"
import { infoLines } from "../../logLines.js"
import { SHUTDOWN_GRACE_MS, serverTimeouts } from "../connectionTimes.js"
import { forwarder } from "./forward.js"
import { makeFrontFreshness } from "./frontFreshness.js"
import { makeHotReads } from "./hotReads.js"
import { primaryLink } from "./primaryLink.js"
import type { FrontClose } from "./protocol.js"


/**
 * An HTTP front: one of the processes that serve Sluice's port (src/http/front/fronts.ts forks them).
 * It answers the reads clients poll from the read model on a read-only connection of its own, and
 * hands every other request to the dispatch process over a private socket.
 */
const main = async () => {
  // Listened for before anything is awaited: a front forked just before the service stops is told to
  // close while it starts, and a message with no listener yet would be lost (and the front left running).
  let close: () => void = () => process.exit(0)
  process.on("message", (message: FrontClose | { t: string }) => {
    if (message.t === "close") close()
  })
  // The dispatch process is gone (stopped, or killed): nothing here can be answered any more.
  let disconnected: () => void = () => process.exit(0)
  process.on("disconnect", () => disconnected())
  const config = await Effect.runPromise(SluiceConfig)
  const log = infoLines(config.logFormat, config.logLevel)
  // Which front answered a read, in its log line: the dispatch process's lines have none.
  const frontId = cluster.worker?.id ?? process.pid
  const socketPath = process.env["SLUICE_FRONT_SOCKET"]!
  const db = new Database(process.env["SLUICE_FRONT_READ_MODEL"]!, { readonly: true, fileMustExist: true })
  db.pragma("busy_timeout = 5000")
  db.pragma("cache_size = -4000")
  const link = primaryLink()
  const fresh = process.env["SLUICE_FRONT_FRESH"] === "true"
  const natsUrl = process.env["SLUICE_FRONT_NATS"]
  // A front that cannot reach NATS as it starts asks the dispatch process for every read's freshness.
  const freshness = fresh && natsUrl !== undefined ? await makeFrontFreshness(natsUrl, db).catch(() => undefined) : undefined
  const hot = makeHotReads(db, link, { fresh, wallClock: process.env["SLUICE_FRONT_CLOCK"] === "wall", ...(freshness === undefined ? {} : { freshness }) })
  const forward = forwarder(socketPath)
  // Browsers' cross-origin requests (and their preflights) are the dispatch process's to answer, with its CORS headers.
  const corsOrigins = config.corsOrigins.length > 0

  const server = createServer(serverTimeouts, (req, res) => {
    const started = performance.now()
    // Once closing, each connection ends with the request it carries.
    if (closing) res.setHeader("connection", "close")
    else res.once("finish", () => closing && server.closeIdleConnections())
    const method = req.method ?? "GET"
    const url = req.url ?? "/"
    const answered = corsOrigins && req.headers.origin !== undefined ? Promise.resolve(undefined) : hot(method, url, req.headers)
    answered.then(
      (answer) => {
        if (answer === undefined) return forward(req, res)
        const body = Buffer.from(answer.body)
        res.writeHead(200, { "content-type": "application/json", "content-length": body.length }).end(body)
        const seconds = (performance.now() - started) / 1000
        link.tellServed({ method, route: answer.route, status: 200, seconds })
        log(`${method} ${answer.path} 200`, {
          method,
          route: answer.route,
          status: 200,
          ms: Math.round(seconds * 10_000) / 10,
          ...(answer.batchId === undefined ? {} : { batch_id: answer.batchId }),
          account: answer.account,
          front: frontId,
        })
      },
      // A read model that could not be read (a file replaced under it): the dispatch process answers.
      () => forward(req, res),
    )
  })

  let closing = false
  close = () => {
    closing = true
    server.close(() => process.exit(0))
    server.closeIdleConnections()
    setTimeout(() => {
      server.closeAllConnections()
      process.exit(0)
    }, SHUTDOWN_GRACE_MS).unref()
  }
  disconnected = () => {
    server.closeAllConnections()
    process.exit(0)
  }
  // A signal to the whole process group (Ctrl-C) is the dispatch process's to act on: it closes the fronts in order.
  process.on("SIGINT", () => {})
  process.on("SIGTERM", () => {})

  server.on("error", (e: NodeJS.ErrnoException) => {
    link.tell({ t: "listen_failed", code: e.code, message: e.message })
    process.exit(1)
  })
  server.listen({ port: config.port, host: config.host }, () => link.tell({ t: "listening" }))
}

void main()
