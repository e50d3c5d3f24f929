import { Effect } from "effect"
import http from "node:http"
import https from "node:https"
import type { ModelEntry } from "../config/Catalog.js"
import type { UpstreamOutcome } from "../domain/upstream/UpstreamOutcome.js"

const retryAfterMs = (header: string | undefined, now: number): number | undefined => {
  if (header === undefined) return undefined
  const seconds = Number(header)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(header)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** The stored body names the public model id; the upstream may know it by another name. */
const upstreamBody = (model: ModelEntry, body: string): string => {
  if (model.upstreamModel === model.id) return body
  const parsed = JSON.parse(body) as Record<string, unknown>
  return JSON.stringify({ ...parsed, model: model.upstreamModel })
}

// One keep-alive pool per upstream; node:http costs a fraction of fetch's per-request overhead.
const agents = new Map<string, http.Agent>()
const agentFor = (url: URL, slots: number) => {
  const key = `${url.protocol}//${url.host}`
  let agent = agents.get(key)
  if (agent === undefined) {
    const options = { keepAlive: true, maxSockets: Math.max(slots, 16) * 2 }
    agent = url.protocol === "https:" ? new https.Agent(options) : new http.Agent(options)
    agents.set(key, agent)
  }
  return agent
}

const post = (model: ModelEntry, body: string, signal: AbortSignal) =>
  new Promise<UpstreamOutcome>((resolve, reject) => {
    const url = new URL(`${model.upstreamUrl}/chat/completions`)
    const payload = Buffer.from(upstreamBody(model, body))
    const request = (url.protocol === "https:" ? https : http).request(
      url,
      {
        method: "POST",
        agent: agentFor(url, model.batchConcurrency),
        headers: {
          "content-type": "application/json",
          "content-length": payload.length,
          ...(model.apiKey === undefined ? {} : { authorization: `Bearer ${model.apiKey}` }),
        },
        signal,
      },
      (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("error", reject)
        response.on("end", () => {
          if (!response.complete) {
            resolve({ _tag: "NetworkError", message: "The model server closed the connection mid-response" })
            return
          }
          const status = response.statusCode ?? 0
          const text = Buffer.concat(chunks).toString("utf8")
          let parsed: unknown
          try {
            parsed = JSON.parse(text)
          } catch {
            if (status >= 200 && status < 300) {
              resolve({ _tag: "NetworkError", message: "The model server sent an incomplete response" })
              return
            }
            parsed = text
          }
          const after = retryAfterMs(response.headers["retry-after"], Date.now())
          resolve(
            after === undefined
              ? { _tag: "Response", status, body: parsed }
              : { _tag: "Response", status, body: parsed, retryAfterMs: after },
          )
        })
      },
    )
    request.on("error", reject)
    request.end(payload)
  })

/** One attempt of one row against the model's upstream; never fails, every way it can end is an outcome. */
export const callUpstream = (model: ModelEntry, body: string): Effect.Effect<UpstreamOutcome> =>
  Effect.tryPromise({ try: (signal) => post(model, body, signal), catch: (error) => error }).pipe(
    Effect.timeoutTo({
      duration: model.timeoutMs,
      onTimeout: (): UpstreamOutcome => ({ _tag: "Timeout" }),
      onSuccess: (outcome) => outcome,
    }),
    Effect.catchAll((error) =>
      Effect.succeed<UpstreamOutcome>({
        _tag: "NetworkError",
        message: `The model server could not be reached: ${error instanceof Error ? error.message : String(error)}`,
      }),
    ),
  )
