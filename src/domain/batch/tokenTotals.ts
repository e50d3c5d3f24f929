import type { BatchUsage } from "../api/BatchObject.js"
import { isObject } from "../json.js"

/** Tokens as a batch counts them: OpenAI's batch `usage`, its two details flattened. */
export interface TokenTotals {
  readonly input_tokens: number
  readonly cached_tokens: number
  readonly output_tokens: number
  readonly reasoning_tokens: number
  readonly total_tokens: number
}

export const noTokens: TokenTotals = { input_tokens: 0, cached_tokens: 0, output_tokens: 0, reasoning_tokens: 0, total_tokens: 0 }

// An upstream's odd value (a string, a fraction, a negative) must not make a batch's total one.
const isCount = (u: unknown): u is number => typeof u === "number" && Number.isSafeInteger(u) && u >= 0
const count = (u: unknown): number => (isCount(u) ? u : 0)
const detail = (details: unknown, name: string): number => (isObject(details) ? count(details[name]) : 0)

/**
 * A result body's tokens, from its `usage`: a chat completion's (or an embeddings answer's) prompt as
 * input and completion as output, a Response object's input and output; the cached and reasoning
 * details where it gives them, and its own total, else input plus output.
 */
export const completionTokens = (completion: unknown): TokenTotals => {
  const usage = isObject(completion) ? completion["usage"] : undefined
  if (!isObject(usage)) return noTokens
  const chat = usage["prompt_tokens"] !== undefined || usage["input_tokens"] === undefined
  const input = count(usage[chat ? "prompt_tokens" : "input_tokens"])
  const output = count(usage[chat ? "completion_tokens" : "output_tokens"])
  const total = usage["total_tokens"]
  return {
    input_tokens: input,
    cached_tokens: detail(usage[chat ? "prompt_tokens_details" : "input_tokens_details"], "cached_tokens"),
    output_tokens: output,
    reasoning_tokens: detail(usage[chat ? "completion_tokens_details" : "output_tokens_details"], "reasoning_tokens"),
    total_tokens: isCount(total) ? total : input + output,
  }
}

export const addTokens = (a: TokenTotals, b: TokenTotals): TokenTotals => ({
  input_tokens: a.input_tokens + b.input_tokens,
  cached_tokens: a.cached_tokens + b.cached_tokens,
  output_tokens: a.output_tokens + b.output_tokens,
  reasoning_tokens: a.reasoning_tokens + b.reasoning_tokens,
  total_tokens: a.total_tokens + b.total_tokens,
})

/** The totals in the batch object's shape. */
export const batchUsage = (t: TokenTotals): BatchUsage => ({
  input_tokens: t.input_tokens,
  input_tokens_details: { cached_tokens: t.cached_tokens },
  output_tokens: t.output_tokens,
  output_tokens_details: { reasoning_tokens: t.reasoning_tokens },
  total_tokens: t.total_tokens,
})
