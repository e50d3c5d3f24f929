import type { RowError, RowEvent } from "../batch/events.js"
import type { RowEffect } from "../batch/rowEffect.js"
import { isObject } from "../json.js"

/*
 * A completion event is an inference that ended: an attempt that settled its row. Rows a batch settled
 * without running them (cancelled, failed or expired in bulk when it closed) have none; their result
 * lines say how they ended.
 */

export type CompletionStatus = "completed" | "failed" | "cancelled"

export interface Completion {
  readonly status: CompletionStatus
  readonly error: RowError | null
  readonly promptTokens: number | null
  readonly completionTokens: number | null
  readonly totalTokens: number | null
  /** Unix ms, the row event's own time. */
  readonly at: number
}

const count = (u: unknown): number | null => (typeof u === "number" && Number.isSafeInteger(u) && u >= 0 ? u : null)

/**
 * A result body's token counts (a chat completion's or an embeddings answer's, a Response object's
 * input and output), each null where its `usage` does not give a whole number.
 */
export const usageTokens = (completion: unknown) => {
  const usage = isObject(completion) ? completion["usage"] : undefined
  const chat = isObject(usage) && (usage["prompt_tokens"] !== undefined || usage["input_tokens"] === undefined)
  const prompt = isObject(usage) ? count(usage[chat ? "prompt_tokens" : "input_tokens"]) : null
  const output = isObject(usage) ? count(usage[chat ? "completion_tokens" : "output_tokens"]) : null
  const total = isObject(usage) ? count(usage["total_tokens"]) : null
  return {
    promptTokens: prompt,
    completionTokens: output,
    totalTokens: total ?? (prompt !== null && output !== null ? prompt + output : null),
  }
}

const noTokens = { promptTokens: null, completionTokens: null, totalTokens: null }

/** The completion a row event records, given the effect it had on its row (rowEffect.ts); none for one that did not settle it. */
export const completionOf = (event: RowEvent, effect: RowEffect): Completion | undefined => {
  switch (effect) {
    case "running":
    case "queued":
      return undefined
    case "completed":
      return event.type === "row_completed"
        ? { status: "completed", error: null, ...usageTokens(event.response.body), at: event.at }
        : undefined
    case "failed":
    case "cancelled":
      return { status: effect, error: "error" in event ? event.error : null, ...noTokens, at: event.at }
  }
}
