import type { RowErrorCode } from "../api/RowErrorCode.js"
import { UpstreamClassification as C, type UpstreamClassification, type UpstreamOutcome } from "./UpstreamOutcome.js"

export const classifyUpstream = (outcome: UpstreamOutcome): UpstreamClassification => {
  switch (outcome._tag) {
    case "Timeout":
      return C.Retryable({ code: "timeout", message: "The upstream request timed out" })
    case "NetworkError":
      return C.Retryable({ code: "upstream_error", message: `The upstream connection failed: ${outcome.message}` })
    case "Response":
      return classifyResponse(outcome.status, outcome.body, outcome.retryAfterMs)
  }
}

const classifyResponse = (status: number, body: unknown, retryAfterMs: number | undefined): UpstreamClassification => {
  if (status >= 200 && status < 300) return C.Success()
  const message = upstreamErrorMessage(body) ?? `The upstream answered HTTP ${status}`
  if (status === 429 || (status >= 500 && status < 600)) {
    const code = retryableCode(status)
    return retryAfterMs === undefined
      ? C.Retryable({ code, status, message })
      : C.Retryable({ code, status, message, retryAfterMs })
  }
  // A 1xx or 3xx from a chat-completion upstream is a misconfiguration that retrying will not cure.
  if (status < 400 || status >= 600) return C.Permanent({ code: "upstream_error", status, message })
  return C.Permanent({ code: permanentCode(status), status, message })
}

const retryableCode = (status: number): RowErrorCode => {
  if (status === 429) return "rate_limited"
  if (status === 504) return "timeout"
  if (status === 503) return "service_unavailable"
  return "upstream_error"
}

const permanentCode = (status: number): RowErrorCode => {
  if (status === 404) return "model_not_found"
  if (status === 401 || status === 403) return "forbidden"
  return "invalid_request"
}

const MAX_MESSAGE_LENGTH = 2_000

/** The message of an OpenAI error envelope `{error: {message}}`, or of the looser shapes some providers send. */
export const upstreamErrorMessage = (body: unknown): string | undefined => {
  if (typeof body !== "object" || body === null) return undefined
  const b = body as Record<string, unknown>
  const error = b["error"]
  const found =
    typeof error === "object" && error !== null
      ? (error as Record<string, unknown>)["message"]
      : typeof error === "string"
        ? error
        : (b["message"] ?? b["detail"])
  if (typeof found !== "string" || found.length === 0) return undefined
  return found.length > MAX_MESSAGE_LENGTH ? `${found.slice(0, MAX_MESSAGE_LENGTH)}…` : found
}
