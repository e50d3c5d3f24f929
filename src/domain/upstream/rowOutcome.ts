import type { RowOutcome } from "../batch/decide.js"
import { classifyUpstream } from "./classifyUpstream.js"
import { backoffMs } from "./retryPolicy.js"
import type { UpstreamOutcome } from "./UpstreamOutcome.js"

/** What an attempt's settle needs beyond the answer: all of it chosen by the caller, so the mapping stays pure. */
export interface AttemptContext {
  /** 1-based: the backoff grows with it. */
  readonly attempt: number
  /** When the answer came (the actors' clock, ms). */
  readonly at: number
  /** A uniform draw in [0, 1) for the backoff's jitter. */
  readonly random: number
  /** The `request_id` a completed row's response carries. */
  readonly requestId: string
  /** The answer's cost from its `usage`, at the model's prices. */
  readonly costOf: (usage: unknown) => number
  /** A completed row's result body from the upstream's answer (a Responses row's Response object); the answer itself when absent. */
  readonly resultBody?: (answer: unknown) => unknown
}

/** The row outcome an upstream answer gives: completed with its response and cost, retryable with its retry time, or permanent. */
export const rowOutcome = (answer: UpstreamOutcome, context: AttemptContext): RowOutcome => {
  const classified = classifyUpstream(answer)
  switch (classified._tag) {
    case "Success": {
      const completion = answer._tag === "Response" ? answer.body : null
      const usage = (completion as { usage?: unknown } | null)?.usage
      return {
        _tag: "Completed",
        response: { status_code: 200, request_id: context.requestId, body: context.resultBody === undefined ? completion : context.resultBody(completion) },
        costUsd: context.costOf(usage),
      }
    }
    case "Retryable": {
      const error =
        classified.status === undefined
          ? { code: classified.code, message: classified.message }
          : { code: classified.code, message: classified.message, status: classified.status }
      return { _tag: "Retryable", error, retryAt: context.at + backoffMs(context.attempt, context.random, classified.retryAfterMs) }
    }
    case "Permanent":
      return { _tag: "Permanent", error: { code: classified.code, message: classified.message, status: classified.status } }
  }
}
