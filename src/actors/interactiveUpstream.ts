import { Data, Effect } from "effect"
import http from "node:http"
import https from "node:https"
import type { ModelEntry } from "../config/Catalog.js"

export class UpstreamFailed extends Data.TaggedError("UpstreamFailed")<{
  readonly timedOut: boolean
  readonly message: string
}> {}

/** An upstream's status and headers; the body is the caller's to read or destroy. */
export interface UpstreamAnswer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: http.IncomingMessage
}

class IdleTimeout extends Error {}
/** Answers whose connection went silent for `timeout_ms` after their headers arrived. */
const silenced = new WeakSet<http.IncomingMessage>()

// Interactive requests get their own keep-alive pools, unbounded: the upstream paces them, not Sluice.
const agents = new Map<string, http.Agent>()
const agentFor = (url: URL) => {
  const key = `${url.protocol}//${url.host}`
  let agent = agents.get(key)
  if (agent === undefined) {
    agent = url.protocol === "https:" ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true })
    agents.set(key, agent)
  }
  return agent
}

/**
 * Sends one interactive request to the model's upstream and answers as soon as its status and headers
 * arrive. `timeout_ms` bounds how long the connection may stay silent, before or during the answer, so
 * a long stream that keeps moving is never cut. Interrupted before the answer, the request is aborted.
 */
export const openUpstream = (model: ModelEntry, payload: string): Effect.Effect<UpstreamAnswer, UpstreamFailed> =>
  Effect.async<UpstreamAnswer, UpstreamFailed>((resume) => {
    const url = new URL(`${model.upstreamUrl}/chat/completions`)
    const bytes = Buffer.from(payload)
    let answered: http.IncomingMessage | undefined
    let current: http.ClientRequest | undefined
    const send = (firstTry: boolean) => {
      const request = (url.protocol === "https:" ? https : http).request(
        url,
        {
          method: "POST",
          agent: agentFor(url),
          headers: {
            "content-type": "application/json",
            "content-length": bytes.length,
            ...(model.apiKey === undefined ? {} : { authorization: `Bearer ${model.apiKey}` }),
          },
        },
        (response) => {
          answered = response
          resume(Effect.succeed({ status: response.statusCode ?? 502, headers: response.headers, body: response }))
        },
      )
      current = request
      request.setTimeout(model.timeoutMs, () => {
        if (answered !== undefined) silenced.add(answered)
        request.destroy(new IdleTimeout())
      })
      request.on("error", (error) => {
        // Once answered, a failure surfaces on the body, where its reader handles it.
        if (answered !== undefined) return
        // A kept-alive socket the server closed while it sat idle (its keep-alive timeout passed, or this
        // process was paused) resets before the server reads the request: sent again on a fresh one.
        if (firstTry && request.reusedSocket && (error as NodeJS.ErrnoException).code === "ECONNRESET") return send(false)
        resume(
          Effect.fail(
            error instanceof IdleTimeout
              ? new UpstreamFailed({ timedOut: true, message: `The model server did not answer within ${model.timeoutMs} ms` })
              : new UpstreamFailed({ timedOut: false, message: `The model server could not be reached: ${error.message}` }),
          ),
        )
      })
      request.end(bytes)
    }
    send(true)
    return Effect.sync(() => current?.destroy())
  })

export const brokenOff = (body: http.IncomingMessage) =>
  silenced.has(body)
    ? new UpstreamFailed({ timedOut: true, message: "The model server went silent mid-answer" })
    : new UpstreamFailed({ timedOut: false, message: "The model server's answer broke off" })

/** The whole body of an answer that does not stream; interrupted, the connection is dropped. */
export const readAll = (body: http.IncomingMessage): Effect.Effect<Buffer, UpstreamFailed> =>
  Effect.async<Buffer, UpstreamFailed>((resume) => {
    const chunks: Array<Buffer> = []
    body.on("data", (chunk: Buffer) => chunks.push(chunk))
    body.on("error", () => resume(Effect.fail(brokenOff(body))))
    body.on("end", () =>
      resume(
        body.complete
          ? Effect.succeed(Buffer.concat(chunks))
          : Effect.fail(brokenOff(body)),
      ),
    )
    return Effect.sync(() => body.destroy())
  })
