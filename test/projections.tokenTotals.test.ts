import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { FinalBatchStatuses } from "../src/domain/api/BatchStatus.js"
import type { BatchEvent } from "../src/domain/batch/events.js"
import { makeApplier } from "../src/projections/Projector.js"
import { ReadModel } from "../src/projections/ReadModel.js"
import { batchId } from "./domain/arbitraries/batchCommands.js"
import { asMessages, messyLog, messyScenario, withReadModel } from "./support/messyBatchLog.js"

/*
 * A batch's token totals are the sum of its completed rows' usage, whatever log the projections
 * read: the decider's own, with stale, repeated and foreign-view events slipped in (row completions
 * after the batch is final among them), applied in windows of random sizes to a real SQLite read
 * model. After every window the totals equal the usage of the result lines that are completed, and
 * once the batch is final they never move again.
 */

/** Each completion its own usage, from its row and attempt, with or without the details. */
const usageOf = (row: number, attempt: number) => {
  const prompt = 10 + row * 7 + attempt
  const completion = 3 + ((row * 13 + attempt * 5) % 40)
  const usage: Record<string, unknown> = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
  if (row % 3 === 0) usage["prompt_tokens_details"] = { cached_tokens: row + attempt }
  if (row % 2 === 0) usage["completion_tokens_details"] = { reasoning_tokens: attempt * 2 }
  if (row % 5 === 4) usage["prompt_tokens_details"] = null
  return usage
}

const withUsage = (event: BatchEvent): BatchEvent =>
  event.type === "row_completed"
    ? { ...event, response: { ...event.response, body: { object: "chat.completion", usage: usageOf(event.row, event.attempt) } } }
    : event

const TOKENS = `input_tokens, cached_tokens, output_tokens, reasoning_tokens, total_tokens`

/** The completed result lines' usage, summed here from the stored responses. */
const completedUsage = (db: ReadModel["Type"]) => {
  const sums = { input_tokens: 0, cached_tokens: 0, output_tokens: 0, reasoning_tokens: 0, total_tokens: 0 }
  const responses = db.prepare(`SELECT response FROM results WHERE batch_id = ? AND status = 'completed'`).pluck().all(batchId) as Array<string>
  for (const response of responses) {
    const u = JSON.parse(response).body.usage
    sums.input_tokens += u.prompt_tokens
    sums.cached_tokens += u.prompt_tokens_details?.cached_tokens ?? 0
    sums.output_tokens += u.completion_tokens
    sums.reasoning_tokens += u.completion_tokens_details?.reasoning_tokens ?? 0
    sums.total_tokens += u.total_tokens
  }
  return { sums, completed: responses.length }
}

describe("a batch's token totals in the read model", () => {
  it("equal the usage of its completed result lines after every window of any log, and stay as they were once the batch is final", () => {
    let finalSeen = 0
    let tokensSeen = 0
    fc.assert(
      fc.property(messyScenario, ([s, extra, windows]) =>
        withReadModel((db) => {
          const apply = makeApplier(db)
          const events = messyLog(s.total, [...s.steps], extra).map(withUsage)
          const read = db.prepare(`SELECT status, completed, ${TOKENS} FROM batches WHERE id = ?`)
          let frozen: unknown
          let next = 0
          for (let w = 0; next < events.length; w++) {
            const size = windows[w % windows.length]!
            const window = asMessages(events.slice(next, next + size), next + 1)
            expect(apply(window)).toEqual([])
            next += size
            const row = read.get(batchId) as ({ status: string; completed: number } & Record<string, number>) | undefined
            if (row === undefined) continue
            const { status, completed, ...tokens } = row
            const fromResults = completedUsage(db)
            expect(fromResults.completed).toBe(completed)
            expect(tokens).toEqual(fromResults.sums)
            if (frozen !== undefined) expect(tokens).toEqual(frozen)
            else if (FinalBatchStatuses.has(status as never)) frozen = tokens
            if (tokens.total_tokens! > 0) tokensSeen++
          }
          if (frozen !== undefined) finalSeen++
        }),
      ),
      { numRuns: 200 },
    )
    // The law was met on batches that counted tokens and on batches that became final, not only vacuously.
    expect(tokensSeen).toBeGreaterThan(0)
    expect(finalSeen).toBeGreaterThan(0)
  })
})
