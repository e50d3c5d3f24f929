import { Effect } from "effect"
import type { Catalog } from "../config/Catalog.js"
import { utcDay } from "../domain/account/utcDay.js"
import { costRange, fitsDailyQuota, maxCompletionOf } from "../domain/batch/estimate.js"
import type { BatchEndpoint } from "../domain/batch/endpoint.js"
import { BodyRejection, normalizeRowBody } from "../domain/batch/responsesBody.js"
import type { ValidBatch } from "../domain/batch/validateCreate.js"
import { countPromptTokens, type TokenSource } from "../actors/promptTokens.js"
import type { BatchReads } from "../projections/batchReads.js"
import type { ReadModel } from "../projections/ReadModel.js"
import { usedUsd } from "../projections/usageReads.js"
import { priorityAllowed } from "../domain/scheduling/priority.js"
import type { Caller } from "./auth.js"
import type { Etas } from "./eta.js"

/** Names no batch: the estimate's rows are not in any queue yet. */
const NOT_YET = "batch_estimate"

/** What a row's tokens are counted on: a Responses row's body in the chat form it is sent in, the others' as they are. */
const chatFormOf = (endpoint: BatchEndpoint, body: Record<string, unknown>): Record<string, unknown> => {
  if (endpoint !== "/v1/responses") return body
  const chat = normalizeRowBody(body)
  return chat instanceof BodyRejection ? body : chat
}

/** `POST /v1/batches/estimate`'s answer for a valid create body: tokens, cost, place in the queues, limits. */
export const estimateBatch = (
  deps: { readonly catalog: Catalog; readonly etas: Etas; readonly batches: BatchReads; readonly db: ReadModel["Type"]; readonly maxUnfinished: number },
  caller: Caller,
  batch: ValidBatch,
  now: number,
) =>
  Effect.gen(function* () {
    const embeddings = batch.endpoint === "/v1/embeddings"
    const byModel = new Map<string, Array<Record<string, unknown>>>()
    for (const r of batch.requests) {
      const bodies = byModel.get(r.model)
      const body = chatFormOf(batch.endpoint, r.body)
      if (bodies === undefined) byModel.set(r.model, [body])
      else bodies.push(body)
    }
    const sources = new Set<TokenSource>()
    const models = yield* Effect.forEach(
      byModel,
      ([model, bodies]) =>
        Effect.gen(function* () {
          const entry = deps.catalog.get(model)!
          const tokens = yield* countPromptTokens(entry, bodies, embeddings)
          sources.add(tokens.source)
          let prompt = 0
          let completion = 0
          bodies.forEach((body, i) => {
            const p = tokens.counts[i]!
            prompt += p
            // An embeddings answer completes nothing.
            if (!embeddings) completion += maxCompletionOf(body, p, tokens.maxModelLen)
          })
          const place = deps.etas.onModel(model, caller.account.id, NOT_YET, { queued: bodies.length, running: 0, priority: batch.priority }, now)
          return {
            model,
            requests: bodies.length,
            prompt_tokens: prompt,
            max_completion_tokens: completion,
            ...costRange(entry, prompt, completion),
            tokens: tokens.source,
            rows_ahead: place.rowsAhead,
            estimated_completion_at: place.finishesAt === undefined ? null : Math.round(place.finishesAt / 1000),
          }
        }),
      { concurrency: 4 },
    )
    const sum = (pick: (m: (typeof models)[number]) => number) => Math.round(models.reduce((n, m) => n + pick(m), 0) * 1e6) / 1e6
    const costMax = sum((m) => m.cost_usd_max)
    const etas = models.map((m) => m.estimated_completion_at)
    return {
      object: "batch.estimate" as const,
      request_counts: { total: batch.requests.length },
      models,
      cost_usd_min: sum((m) => m.cost_usd_min),
      cost_usd_max: costMax,
      estimated_completion_at: etas.some((e) => e === null) ? null : Math.max(...(etas as Array<number>)),
      tokens: sources.has("approximate") ? ("approximate" as const) : ("upstream" as const),
      fits: {
        unfinished_batches: deps.batches.unfinishedCount(caller.account.id) < deps.maxUnfinished,
        daily_quota: fitsDailyQuota(caller.account.daily_quota_usd, usedUsd(deps.db, caller.account.id, utcDay(now)), costMax),
        priority: priorityAllowed(batch.priority, caller.account.max_priority),
      },
    }
  })
