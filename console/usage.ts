import type { BatchUsage } from "./api.js"
import { tokens } from "./dom.js"

/** Token totals, a batch's or a response's: all of them, then input and output with the details the upstream gave. */
export const tokenFacts = (usage: BatchUsage) => {
  const cached = usage.input_tokens_details.cached_tokens
  const reasoning = usage.output_tokens_details.reasoning_tokens
  return (
    `${tokens(usage.total_tokens)} (${tokens(usage.input_tokens)} in${cached > 0 ? `, ${tokens(cached)} cached` : ""}; ` +
    `${tokens(usage.output_tokens)} out${reasoning > 0 ? `, ${tokens(reasoning)} reasoning` : ""})`
  )
}
