/** A row's completion budget when it names none and the upstream does not say its context length. */
export const DEFAULT_MAX_COMPLETION_TOKENS = 4096

/** The most a row may complete: its own `max_completion_tokens` or `max_tokens`, else what the context leaves. */
export const maxCompletionOf = (body: Readonly<Record<string, unknown>>, promptTokens: number, maxModelLen: number | undefined): number => {
  const own = body["max_completion_tokens"] ?? body["max_tokens"]
  if (typeof own === "number" && own > 0) return own
  return maxModelLen === undefined ? DEFAULT_MAX_COMPLETION_TOKENS : Math.max(0, maxModelLen - promptTokens)
}

export interface Prices {
  readonly inputUsdPerMtok: number
  readonly outputUsdPerMtok: number
}

/** Micro-dollars, as batch objects show cost. */
const usd = (x: number) => Math.round(x * 1e6) / 1e6

/** The least a model's rows can cost (their prompts, nothing completed) and the most (every budget used). */
export const costRange = (prices: Prices, promptTokens: number, maxCompletionTokens: number) => {
  const min = (promptTokens * prices.inputUsdPerMtok) / 1e6
  return { cost_usd_min: usd(min), cost_usd_max: usd(min + (maxCompletionTokens * prices.outputUsdPerMtok) / 1e6) }
}

/** Whether the batch's most cost fits what is left of the account's quota today (no quota: always). */
export const fitsDailyQuota = (quotaUsd: number | null, usedTodayUsd: number, costUsdMax: number): boolean =>
  quotaUsd === null || usedTodayUsd + costUsdMax <= quotaUsd
