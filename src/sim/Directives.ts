/**
 * Per-request directives. A test makes one specific row misbehave by writing these into the text of
 * the request's LAST user message; several may be combined. They override the seeded random faults.
 *
 *   [sim:status=CODE]   answer CODE (400-599) with an OpenAI error envelope, on every such request.
 *                       429 answers carry Retry-After.
 *   [sim:fail=N:CODE]   the first N requests whose last user message is identical answer CODE;
 *                       later ones proceed normally (a per-content counter, kept for the server's life).
 *   [sim:hang]          never answer; the request keeps its concurrency slot until the client gives up
 *                       or the server closes.
 *   [sim:reset]         reset the TCP connection instead of answering.
 *   [sim:truncate]      send the status line and half the body, then end the socket.
 *   [sim:latency=MS]    take MS milliseconds to answer (replaces latencyMs and jitterMs).
 *   [sim:tokens=N]      the completion is N tokens long (max_tokens still cuts it).
 *
 * When several outcomes are requested the first of status, fail (while failing), hang, reset,
 * truncate wins. A request carrying any directive is exempt from the seeded faults (its PRNG draws
 * are still made, so the fault sequence of other requests does not shift). A malformed or unknown
 * `[sim:...]` tag is answered with 400 so typos are loud.
 */

export interface Directives {
  readonly status?: number
  readonly fail?: { readonly count: number; readonly status: number }
  readonly hang: boolean
  readonly reset: boolean
  readonly truncate: boolean
  readonly latencyMs?: number
  readonly tokens?: number
  /** Set when a tag could not be understood; the request is then answered 400 with this message. */
  readonly error?: string
}

/** Builders for the directive tags, so tests do not spell them by hand. */
export const simDirective = {
  status: (code: number): string => `[sim:status=${code}]`,
  fail: (count: number, code: number): string => `[sim:fail=${count}:${code}]`,
  hang: "[sim:hang]",
  reset: "[sim:reset]",
  truncate: "[sim:truncate]",
  latency: (ms: number): string => `[sim:latency=${ms}]`,
  tokens: (n: number): string => `[sim:tokens=${n}]`,
} as const

export const DIRECTIVE_MARK = "[sim:"

const TAG = /\[sim:([a-z]+)(?:=([^\]]*))?\]/g
const NON_NEGATIVE_INT = /^\d+$/

const errorStatus = (raw: string | undefined): number | undefined => {
  if (raw === undefined || !NON_NEGATIVE_INT.test(raw)) return undefined
  const code = Number(raw)
  return code >= 400 && code <= 599 ? code : undefined
}

const count = (raw: string | undefined): number | undefined =>
  raw !== undefined && NON_NEGATIVE_INT.test(raw) ? Number(raw) : undefined

/** Reads every `[sim:...]` tag in `text`; callers skip texts without DIRECTIVE_MARK. */
export const parseDirectives = (text: string): Directives => {
  let status: number | undefined
  let fail: { count: number; status: number } | undefined
  let hang = false
  let reset = false
  let truncate = false
  let latencyMs: number | undefined
  let tokens: number | undefined
  let error: string | undefined
  for (const match of text.matchAll(TAG)) {
    const [tag, name, value] = match
    switch (name) {
      case "status":
        status = errorStatus(value)
        if (status === undefined) error ??= `Invalid sim directive ${tag}: expected a status 400-599`
        break
      case "fail": {
        const [n, code] = (value ?? "").split(":")
        const failCount = count(n)
        const failStatus = errorStatus(code)
        if (failCount === undefined || failStatus === undefined) {
          error ??= `Invalid sim directive ${tag}: expected [sim:fail=N:STATUS]`
        } else {
          fail = { count: failCount, status: failStatus }
        }
        break
      }
      case "hang":
        hang = true
        break
      case "reset":
        reset = true
        break
      case "truncate":
        truncate = true
        break
      case "latency":
        latencyMs = count(value)
        if (latencyMs === undefined) error ??= `Invalid sim directive ${tag}: expected milliseconds`
        break
      case "tokens":
        tokens = count(value)
        if (tokens === undefined) error ??= `Invalid sim directive ${tag}: expected a token count`
        break
      default:
        error ??= `Unknown sim directive ${tag}`
    }
  }
  return { status, fail, hang, reset, truncate, latencyMs, tokens, error }
}
