import { Effect } from "effect"
import type { ModelEntry } from "../config/Catalog.js"
import type { UpstreamOutcome } from "../domain/upstream/UpstreamOutcome.js"


const retryAfterMs = (header: string | null, now: number): number | undefined => {
  if (header === null) return undefined
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

/** One attempt of one row against the model's upstream; never fails, every way it can end is an outcome. */
export const callUpstream = (model: ModelEntry, body: string): Effect.Effect<UpstreamOutcome> =>
  Effect.tryPromise({
    try: async (signal): Promise<UpstreamOutcome> => {
      const response = await fetch(`${model.upstreamUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: upstreamBody(model, body),
        signal,
      })
      const text = await response.text()
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        if (response.ok) return { _tag: "NetworkError", message: "The model server sent an incomplete response" }
        parsed = text
      }
      const after = retryAfterMs(response.headers.get("retry-after"), Date.now())
      return after === undefined
        ? { _tag: "Response", status: response.status, body: parsed }
        : { _tag: "Response", status: response.status, body: parsed, retryAfterMs: after }
    },
    catch: (error) => error,
  }).pipe(
    Effect.timeoutTo({
      duration: model.timeoutMs,
      onTimeout: (): UpstreamOutcome => ({ _tag: "Timeout" }),
      onSuccess: (outcome) => outcome,
    }),
    Effect.catchAll((error) =>
      Effect.succeed<UpstreamOutcome>({
        _tag: "NetworkError",
        message: `The model server could not be reached: ${error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)}`,
      }),
    ),
  )
