import type { ResponseObject, StreamDetail, StreamSummary } from "../sdk/index.js"
import { shownPriority } from "./priorityOption.js"

const iso = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString()

/** The text the model answered: its message items' text, in order. */
export const outputText = (r: ResponseObject) =>
  r.output.flatMap((item) => (item.type === "message" ? item.content.map((part) => part.text) : [])).join("")

export const functionCalls = (r: ResponseObject) => r.output.filter((item) => item.type === "function_call").length

/** One line: its id, status, model, tokens, where it belongs, when it was created, and its error. */
export const responseSummary = (r: ResponseObject) => {
  const stream = r.metadata["stream_id"]
  const customId = r.metadata["custom_id"]
  return [
    `${r.id} ${r.status}: ${r.model}${shownPriority(r.priority)}`,
    ...(r.usage === undefined ? [] : [`${r.usage.total_tokens} tokens`]),
    ...(stream === undefined ? [] : [`stream ${stream}`]),
    ...(customId === undefined ? [] : [`custom_id ${customId}`]),
    `created ${iso(r.created_at)}`,
  ].join(", ") + (r.error === null ? "" : `; ${r.error.code}: ${r.error.message}`)
}

export const streamLine = (s: StreamSummary) =>
  `${s.id} ${s.status}, window ${s.window}${shownPriority(s.priority)}: ${JSON.stringify(s.name)}, created ${s.created_at}`

/** The stream's line and its counters. */
export const streamStatus = (s: StreamDetail) => {
  const settled = s.completed_items + s.failed_items + s.cancelled_items
  return (
    `${streamLine(s)}\n` +
    `${s.total_items} ${s.total_items === 1 ? "item" : "items"}: ${s.pending_items} pending, ${s.running_items} running, ` +
    `${s.completed_items} completed, ${s.failed_items} failed, ${s.cancelled_items} cancelled (${settled} settled); ` +
    `${s.total_tokens} tokens (${s.total_prompt_tokens} prompt, ${s.total_completion_tokens} completion)` +
    (s.last_completion_at === null ? "" : `; last completion ${s.last_completion_at}, ${s.latest_completion_id}`)
  )
}
