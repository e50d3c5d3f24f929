/** OpenAI-style error envelopes, serialized: `{"error":{"message","type","param","code"}}`. */

const KINDS: Readonly<Record<number, { readonly type: string; readonly code: string }>> = {
  400: { type: "invalid_request_error", code: "invalid_request" },
  401: { type: "authentication_error", code: "invalid_api_key" },
  403: { type: "permission_error", code: "permission_denied" },
  404: { type: "invalid_request_error", code: "not_found" },
  409: { type: "invalid_request_error", code: "conflict" },
  413: { type: "invalid_request_error", code: "request_too_large" },
  422: { type: "invalid_request_error", code: "unprocessable_entity" },
  429: { type: "rate_limit_error", code: "rate_limit_exceeded" },
  500: { type: "server_error", code: "internal_error" },
  502: { type: "server_error", code: "bad_gateway" },
  503: { type: "server_error", code: "service_unavailable" },
  504: { type: "server_error", code: "gateway_timeout" },
}

export const errorEnvelope = (
  status: number,
  message: string,
  param: string | null = null,
  code?: string,
): string => {
  const kind = KINDS[status] ?? { type: status < 500 ? "invalid_request_error" : "server_error", code: `http_${status}` }
  return JSON.stringify({ error: { message, type: kind.type, param, code: code ?? kind.code } })
}

export const modelNotFound = (model: string): string =>
  errorEnvelope(404, `The model '${model}' does not exist`, "model", "model_not_found")
