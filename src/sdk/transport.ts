import { backoffDelayMs, type OnRetry, retryAfterMs, type RetryPolicy } from "./backoff.js"
import { describeCause, SluiceApiError, SluiceConnectionError } from "./errors.js"

/**
 * `idempotent`: retried on 429, 5xx and any connection error. `create`: stores something, so it is
 * retried only when nothing can have been stored — a 429, a 503 or a refused connection — never
 * after another 5xx or a reset, which may come after the server acted. `keyed`: a create sent with an
 * `Idempotency-Key`, which the server answers once whatever the retries: retried as `idempotent`, and
 * on the 409 that says the first attempt is still being stored.
 */
export type RetryMode = "idempotent" | "create" | "keyed"

export interface TransportOptions {
  readonly baseUrl: string
  readonly token: string
  readonly retry: RetryPolicy
  readonly fetch: typeof fetch
  readonly random?: () => number
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
  readonly onRetry?: OnRetry
}

export interface SendOptions {
  readonly body?: unknown
  /** A multipart body, sent instead of `body`: fetch sets its content type and boundary. */
  readonly form?: FormData
  readonly query?: Record<string, string | number | undefined>
  readonly headers?: Record<string, string>
  readonly mode?: RetryMode
  readonly signal?: AbortSignal
}

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort)
      resolve()
    }, ms)
    signal?.addEventListener("abort", onAbort, { once: true })
  })

const errorCodes = (error: unknown, into: Set<string> = new Set(), depth = 0): Set<string> => {
  if (typeof error !== "object" || error === null || depth > 5) return into
  const code = (error as { code?: unknown }).code
  if (typeof code === "string") into.add(code)
  errorCodes((error as { cause?: unknown }).cause, into, depth + 1)
  if (error instanceof AggregateError) for (const inner of error.errors) errorCodes(inner, into, depth + 1)
  return into
}

const retryableStatus = (status: number, mode: RetryMode) =>
  mode === "create" ? status === 429 || status === 503 : status === 429 || status >= 500 || (mode === "keyed" && status === 409)

const retryableConnectionError = (error: unknown, mode: RetryMode) =>
  mode !== "create" || errorCodes(error).has("ECONNREFUSED")

const errorDetail = (status: number, statusText: string, text: string) => {
  try {
    const parsed = JSON.parse(text) as { error?: Record<string, unknown> }
    const e = parsed.error
    if (typeof e === "object" && e !== null && typeof e["message"] === "string") {
      return {
        message: e["message"],
        type: typeof e["type"] === "string" ? e["type"] : "unknown_error",
        param: typeof e["param"] === "string" ? e["param"] : null,
        code: typeof e["code"] === "string" ? e["code"] : null,
      }
    }
  } catch {
    // not the OpenAI envelope: a proxy's page, say
  }
  return { message: text.slice(0, 500) || `${status} ${statusText}`, type: "unknown_error", param: null, code: null }
}

export class Transport {
  private readonly random: () => number
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>

  constructor(private readonly options: TransportOptions) {
    this.random = options.random ?? Math.random
    this.sleep = options.sleep ?? sleep
  }

  url(path: string, query: SendOptions["query"] = {}): string {
    const params = new URLSearchParams()
    for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value))
    const search = params.toString()
    return `${this.options.baseUrl}${path}${search === "" ? "" : `?${search}`}`
  }

  /** Answers the first 2xx response, its body unread, after retrying as `mode` allows; throws SluiceApiError otherwise. */
  async send(method: string, path: string, options: SendOptions = {}): Promise<Response> {
    const { retry: policy } = this.options
    const mode = options.mode ?? "idempotent"
    const url = this.url(path, options.query)
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.token}`,
      accept: "application/json",
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      ...options.headers,
    }
    const body = options.form ?? (options.body === undefined ? undefined : JSON.stringify(options.body))
    for (let retry = 0; ; retry++) {
      let response: Response
      try {
        // Unless redirects are refused outright, fetch keeps every byte of a form sent until the answer, to send it again to a redirect's target.
        const redirect = options.form === undefined ? "follow" : "error"
        response = await this.options.fetch(url, { method, headers, body, redirect, signal: options.signal ?? null })
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason
        if (retry >= policy.maxRetries || !retryableConnectionError(error, mode)) {
          throw new SluiceConnectionError(method, url, error)
        }
        await this.pause(method, url, describeCause(error), retry, backoffDelayMs(retry, policy, this.random(), undefined), options.signal)
        continue
      }
      if (response.ok) return response
      const error = new SluiceApiError(
        response.status,
        errorDetail(response.status, response.statusText, await response.text()),
        method,
        url,
      )
      const asked = retryAfterMs(response.headers.get("retry-after"), Date.now())
      const worthRetrying =
        retryableStatus(response.status, mode) &&
        // Quota renews at 00:00 UTC; no backoff outlasts it.
        error.type !== "insufficient_quota" &&
        (asked === undefined || asked <= policy.maxRetryAfterMs)
      if (retry >= policy.maxRetries || !worthRetrying) throw error
      const reason = `answered ${response.status}: ${error.detail}`
      await this.pause(method, url, reason, retry, backoffDelayMs(retry, policy, this.random(), asked), options.signal)
    }
  }

  private pause(method: string, url: string, reason: string, retry: number, delayMs: number, signal: AbortSignal | undefined) {
    const maxRetries = this.options.retry.maxRetries
    this.options.onRetry?.({ method, url, reason, retry: retry + 1, maxRetries, delayMs })
    return this.sleep(delayMs, signal)
  }

  async json<T>(method: string, path: string, options: SendOptions = {}): Promise<T> {
    const response = await this.send(method, path, options)
    return (await response.json()) as T
  }
}
