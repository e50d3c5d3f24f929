import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { parseChatRequest, type ChatRequest } from "./ChatRequest.js"
import { answerFor, completionJson, completionStream } from "./Completion.js"
import { type EmbeddingsRequest, embeddingsJson, parseEmbeddingsRequest } from "./Embeddings.js"
import { tokenizeAnswer } from "./Tokenize.js"
import { ConcurrencyGate, type GateWaiter } from "./ConcurrencyGate.js"
import { DIRECTIVE_MARK, parseDirectives, type Directives } from "./Directives.js"
import { errorEnvelope, modelNotFound } from "./OpenAiError.js"
import { mulberry32 } from "./Prng.js"
import { renderMetrics } from "./PrometheusMetrics.js"
import { resolveOptions, type SimulatorOptions } from "./SimulatorOptions.js"
import { bump, modelCounters, type ModelCounters, type SimStats } from "./SimStats.js"

export interface Simulator {
  /** Base URL ending in /v1, e.g. http://127.0.0.1:41234/v1 */
  readonly url: string
  readonly port: number
  /** Stops listening and drops every connection, hanging ones included. */
  close(): Promise<void>
  stats(): SimStats
}

// What a request will do once it holds a slot; any other value is an error status to answer.
const ANSWER = 0
const HANG = 1
const RESET = 2
const TRUNCATE = 3
const UNDECIDED = -1

const WAITING = 0
const RUNNING = 1
const HANGING = 2
const DONE = 3

// The endpoint a request came to.
const CHAT = 0
const EMBEDDINGS = 1

interface Exchange extends GateWaiter<Exchange> {
  readonly res: ServerResponse
  readonly request: ChatRequest | EmbeddingsRequest
  readonly model: ModelCounters
  readonly outcome: number
  readonly latencyMs: number
  readonly tokens: number | undefined
  state: number
  /** Whether a close listener is attached. */
  watched: boolean
}

const MAX_BODY_CHARS = 32 * 1024 * 1024
const JSON_TYPE = "application/json"
const SSE_TYPE = "text/event-stream"
const METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"

const send = (res: ServerResponse, status: number, body: string, contentType: string = JSON_TYPE): void => {
  res.writeHead(status, ["content-type", contentType, "content-length", String(Buffer.byteLength(body))])
  res.end(body)
}

const gone = (res: ServerResponse): boolean => res.destroyed || res.socket === null || res.socket.destroyed

export const startSimulator = async (options?: SimulatorOptions): Promise<Simulator> => {
  const config = resolveOptions(options)
  const random = mulberry32(config.seed)
  const models = new Map(config.models.map((name) => [name, modelCounters(name)]))
  const gate = new ConcurrencyGate<Exchange>(config.concurrency)
  const failCounts = new Map<string, number>()
  const answered = new Map<number, number>()
  const retryAfter = String(config.retryAfterSeconds)
  const [upTo429, upTo500, upTo503, upToHang, upToReset, upToTruncate] = config.faultThresholds
  const startedAt = Math.floor(Date.now() / 1000)
  const modelsBody = JSON.stringify({
    object: "list",
    data: config.models.map((id) => ({ id, object: "model", created: startedAt, owned_by: "sluice-sim" })),
  })
  let received = 0
  let maxInFlight = 0
  let hung = 0
  let resets = 0
  let truncated = 0
  let nextId = 0
  let closing: Promise<void> | undefined
  let admitting = false

  /** Answers a chat-completion or embeddings request and counts it. */
  const reply = (res: ServerResponse, status: number, body: string, model?: ModelCounters): void => {
    bump(answered, status)
    if (model !== undefined) bump(model.answered, status)
    const length = String(Buffer.byteLength(body))
    if (status === 429) {
      res.writeHead(429, ["content-type", JSON_TYPE, "content-length", length, "retry-after", retryAfter])
    } else {
      res.writeHead(status, ["content-type", JSON_TYPE, "content-length", length])
    }
    res.end(body)
  }

  const seededOutcome = (draw: number): number => {
    if (draw < upTo429) return 429
    if (draw < upTo500) return 500
    if (draw < upTo503) return 503
    if (draw < upToHang) return HANG
    if (draw < upToReset) return RESET
    if (draw < upToTruncate) return TRUNCATE
    return ANSWER
  }

  const directedOutcome = (directives: Directives, text: string): number => {
    if (directives.status !== undefined) return directives.status
    if (directives.fail !== undefined) {
      const seen = (failCounts.get(text) ?? 0) + 1
      failCounts.set(text, seen)
      if (seen <= directives.fail.count) return directives.fail.status
    }
    if (directives.hang) return HANG
    if (directives.reset) return RESET
    if (directives.truncate) return TRUNCATE
    return ANSWER
  }

  const receive = (req: IncomingMessage, res: ServerResponse, endpoint: typeof CHAT | typeof EMBEDDINGS): void => {
    received++
    let body = ""
    let tooLarge = false
    req.setEncoding("utf8")
    req.on("data", (chunk: string) => {
      if (tooLarge) return
      body += chunk
      if (body.length > MAX_BODY_CHARS) {
        tooLarge = true
        body = ""
      }
    })
    req.on("end", () => {
      if (tooLarge) reply(res, 413, errorEnvelope(413, "Request body too large."))
      else admit(res, body, endpoint)
    })
  }

  const tokenize = (req: IncomingMessage, res: ServerResponse): void => {
    let body = ""
    req.setEncoding("utf8")
    req.on("data", (chunk: string) => {
      if (body.length <= MAX_BODY_CHARS) body += chunk
    })
    req.on("end", () => {
      if (body.length > MAX_BODY_CHARS) return send(res, 413, errorEnvelope(413, "Request body too large."))
      const answer = tokenizeAnswer(body)
      if (typeof answer === "string") return send(res, 400, errorEnvelope(400, answer))
      if (!models.has(answer.model)) return send(res, 404, modelNotFound(answer.model))
      send(res, 200, answer.json)
    })
  }

  const admit = (res: ServerResponse, body: string, endpoint: typeof CHAT | typeof EMBEDDINGS): void => {
    if (closing !== undefined) return void res.destroy()
    const request = endpoint === CHAT ? parseChatRequest(body) : parseEmbeddingsRequest(body)
    if (typeof request === "string") return reply(res, 400, errorEnvelope(400, request))
    const model = models.get(request.model)
    if (model === undefined) return reply(res, 404, modelNotFound(request.model))
    // Always two draws per valid request, so one request's directives never shift the others' faults.
    const faultDraw = random()
    const jitterDraw = random()
    let outcome = UNDECIDED
    let latencyMs = config.latencyMs + jitterDraw * config.jitterMs
    let tokens: number | undefined
    // An embeddings request's directives are in its texts; `tokens` means nothing to it.
    const text = "lastUserText" in request ? request.lastUserText : request.text
    if (text.includes(DIRECTIVE_MARK)) {
      const directives = parseDirectives(text)
      if (directives.error !== undefined) return reply(res, 400, errorEnvelope(400, directives.error), model)
      outcome = directedOutcome(directives, text)
      if (directives.latencyMs !== undefined) latencyMs = directives.latencyMs
      tokens = directives.tokens
    }
    if (outcome === UNDECIDED) outcome = seededOutcome(faultDraw)
    const exchange: Exchange = {
      prev: undefined,
      next: undefined,
      queued: false,
      res,
      request,
      model,
      outcome,
      latencyMs,
      tokens,
      state: WAITING,
      watched: false,
    }
    if (gate.tryEnter()) return begin(exchange)
    gate.enqueue(exchange)
    model.waiting++
    watch(exchange)
  }

  const watch = (exchange: Exchange): void => {
    if (exchange.watched) return
    exchange.watched = true
    exchange.res.once("close", () => abandoned(exchange))
  }

  /** The client went away (or the response ended normally, in which case there is nothing to do). */
  const abandoned = (exchange: Exchange): void => {
    if (exchange.state === WAITING) {
      if (exchange.queued) {
        gate.remove(exchange)
        exchange.model.waiting--
      }
      exchange.state = DONE
    } else if (exchange.state === HANGING) {
      finish(exchange)
    }
  }

  const begin = (exchange: Exchange): void => {
    exchange.state = RUNNING
    exchange.model.running++
    if (gate.running > maxInFlight) maxInFlight = gate.running
    if (exchange.latencyMs > 0) setTimeout(act, exchange.latencyMs, exchange).unref()
    else act(exchange)
  }

  const act = (exchange: Exchange): void => {
    const { res, outcome } = exchange
    if (closing !== undefined || gone(res)) return finish(exchange)
    switch (outcome) {
      case ANSWER:
        answer(exchange)
        break
      case HANG:
        hung++
        exchange.state = HANGING
        watch(exchange)
        return
      case RESET:
        resets++
        res.socket?.resetAndDestroy()
        break
      case TRUNCATE:
        truncated++
        truncate(exchange)
        break
      default:
        reply(res, outcome, errorEnvelope(outcome, `Simulated ${outcome} error.`), exchange.model)
    }
    finish(exchange)
  }

  const answer = (exchange: Exchange): void => {
    const { res, request, model } = exchange
    if ("inputs" in request) {
      bump(answered, 200)
      bump(model.answered, 200)
      return send(res, 200, embeddingsJson(model.quoted, request))
    }
    const result = answerFor(request, exchange.tokens)
    const id = `chatcmpl-sim${(++nextId).toString(36)}`
    const created = Math.floor(Date.now() / 1000)
    bump(answered, 200)
    bump(model.answered, 200)
    if (request.stream) {
      res.writeHead(200, ["content-type", SSE_TYPE, "cache-control", "no-cache"])
      res.end(completionStream(id, created, model.quoted, result, request.includeUsage))
    } else {
      send(res, 200, completionJson(id, created, model.quoted, result))
    }
  }

  /** Status line and half the body, delimited by closing the connection rather than by a length. */
  const truncate = (exchange: Exchange): void => {
    const { res, request, model } = exchange
    if ("inputs" in request) {
      const full = embeddingsJson(model.quoted, request)
      res.socket?.end(`HTTP/1.1 200 OK\r\ncontent-type: ${JSON_TYPE}\r\nconnection: close\r\n\r\n${full.slice(0, full.length >> 1)}`)
      return
    }
    const result = answerFor(request, exchange.tokens)
    const id = `chatcmpl-sim${(++nextId).toString(36)}`
    const created = Math.floor(Date.now() / 1000)
    const full = request.stream
      ? completionStream(id, created, model.quoted, result, request.includeUsage)
      : completionJson(id, created, model.quoted, result)
    const type = request.stream ? SSE_TYPE : JSON_TYPE
    res.socket?.end(`HTTP/1.1 200 OK\r\ncontent-type: ${type}\r\nconnection: close\r\n\r\n${full.slice(0, full.length >> 1)}`)
  }

  const finish = (exchange: Exchange): void => {
    exchange.state = DONE
    exchange.model.running--
    gate.leave()
    admitWaiting()
  }

  // A loop rather than recursion: with zero latency each admitted request finishes synchronously.
  const admitWaiting = (): void => {
    if (admitting || closing !== undefined) return
    admitting = true
    try {
      for (let next = gate.admitNext(); next !== undefined; next = gate.admitNext()) {
        next.model.waiting--
        begin(next)
      }
    } finally {
      admitting = false
    }
  }

  const server = createServer({ noDelay: true }, (req, res) => {
    const url = req.url ?? "/"
    const query = url.indexOf("?")
    const path = query === -1 ? url : url.slice(0, query)
    if (req.method === "POST" && path === "/v1/chat/completions") return receive(req, res, CHAT)
    if (req.method === "POST" && path === "/v1/embeddings") return receive(req, res, EMBEDDINGS)
    if (req.method === "POST" && path === "/tokenize") return tokenize(req, res)
    if (req.method === "GET" || req.method === "HEAD") {
      if (path === "/metrics") return send(res, 200, renderMetrics(models.values()), METRICS_TYPE)
      if (path === "/v1/models") return send(res, 200, modelsBody)
      if (path === "/health") return send(res, 200, '{"status":"ok"}')
    }
    send(res, 404, errorEnvelope(404, `Unknown route: ${req.method} ${path}`))
  })

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(config.port, config.host, () => {
      server.off("error", reject)
      resolve()
    })
  })
  const port = (server.address() as AddressInfo).port
  const host = config.host.includes(":") ? `[${config.host}]` : config.host

  return {
    url: `http://${host}:${port}/v1`,
    port,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        for (const waiter of gate.drain()) {
          waiter.model.waiting--
          waiter.state = DONE
        }
        server.close(() => resolve())
        server.closeAllConnections()
      })
      return closing
    },
    stats: () => ({
      received,
      answered: Object.fromEntries(answered),
      inFlight: gate.running,
      maxInFlight,
      waiting: gate.waiting,
      hung,
      reset: resets,
      truncated,
    }),
  }
}
