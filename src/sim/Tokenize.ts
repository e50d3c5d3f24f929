import { isObject } from "../domain/json.js"
import { parseChatRequest } from "./ChatRequest.js"
import { CHARS_PER_TOKEN } from "./Completion.js"
import { parseJsonObject } from "./jsonBody.js"

/** The context length the simulator reports for every model, as vLLM's `/tokenize` does for its own. */
export const SIM_MAX_MODEL_LEN = 32_768

/**
 * vLLM's `POST /tokenize`: `{model, messages}` (a chat request) or `{model, prompt}`, answered
 * `{count, max_model_len, tokens}`. The count is the one the simulator's completions report as
 * `usage.prompt_tokens` for the same messages; the token ids are placeholders.
 */
export const tokenizeAnswer = (body: string): { readonly model: string; readonly json: string } | string => {
  const json = parseJsonObject(body)
  if (typeof json === "string") return json
  let model: string
  let count: number
  if (typeof json.prompt === "string") {
    if (typeof json.model !== "string" || json.model.length === 0) return "You must provide a model parameter."
    model = json.model
    count = Math.ceil(json.prompt.length / CHARS_PER_TOKEN)
  } else {
    const request = parseChatRequest(body)
    if (typeof request === "string") return request
    model = request.model
    count = Math.max(1, Math.ceil(request.promptChars / CHARS_PER_TOKEN))
  }
  const tokens = Array.from({ length: count }, (_, i) => 1000 + (i % 30_000))
  return { model, json: JSON.stringify({ count, max_model_len: SIM_MAX_MODEL_LEN, tokens }) }
}
