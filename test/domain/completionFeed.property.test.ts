import fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { RowEvent } from "../../src/domain/batch/events.js"
import type { RowEffect } from "../../src/domain/batch/rowEffect.js"
import { completionOf, usageTokens } from "../../src/domain/completion/completion.js"
import { comparePositions, formatCompletionId, parseCompletionId } from "../../src/domain/completion/feedPosition.js"

const position = fc.record({ seq: fc.nat({ max: Number.MAX_SAFE_INTEGER }), idx: fc.nat({ max: 0xffffff }) })

describe("completion ids", () => {
  it("name their position exactly: parsing a formatted id gives the position back", () => {
    fc.assert(
      fc.property(position, (at) => {
        expect(parseCompletionId(formatCompletionId(at))).toEqual(at)
      }),
    )
  })

  it("sort as the feed does: comparing two ids as strings orders them as their log positions", () => {
    fc.assert(
      fc.property(position, position, (a, b) => {
        const [x, y] = [formatCompletionId(a), formatCompletionId(b)]
        expect(Math.sign(x < y ? -1 : x > y ? 1 : 0)).toBe(Math.sign(comparePositions(a, b)))
      }),
    )
  })

  it("anything else is not one", () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const at = parseCompletionId(text)
        if (at !== undefined) expect(formatCompletionId(at)).toBe(text)
      }),
    )
    for (const text of ["", "cmpl_", "cmpl_0000000000002a00000", "cmpl_0000000000002A000000", "CMPL_0000000000002a000000", "cmpl_ffffffffffffff000000", "019d58a7-2ece-7742-bc3e-69ba44168279"]) {
      expect(parseCompletionId(text), text).toBeUndefined()
    }
  })
})

const ids = { batch_id: "batch_x", row: 3, attempt: 1, at: 1_767_225_600_123 }
const error = { code: "invalid_request", message: "no", status: 400 }

describe("a row event's completion", () => {
  it("is the row settling: completed with its usage, failed or cancelled with its error; a start or a retry that leaves the row queued is none", () => {
    const body = { usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 } }
    const completed: RowEvent = { type: "row_completed", ...ids, response: { status_code: 200, request_id: "r", body }, cost_usd: 0 }
    expect(completionOf(completed, "completed")).toEqual({ status: "completed", error: null, promptTokens: 12, completionTokens: 30, totalTokens: 42, at: ids.at })
    const failed: RowEvent = { type: "row_failed", ...ids, error }
    expect(completionOf(failed, "failed")).toEqual({ status: "failed", error, promptTokens: null, completionTokens: null, totalTokens: null, at: ids.at })
    const retryingAfterCancel: RowEvent = { type: "row_retrying", ...ids, error, retry_at: ids.at + 1 }
    expect(completionOf(retryingAfterCancel, "cancelled")).toMatchObject({ status: "cancelled", error })
    expect(completionOf({ type: "row_cancelled", ...ids, error: null }, "cancelled")).toMatchObject({ status: "cancelled", error: null })
    for (const effect of ["running", "queued"] satisfies Array<RowEffect>) {
      expect(completionOf({ type: "row_started", ...ids }, effect)).toBeUndefined()
      expect(completionOf(retryingAfterCancel, effect)).toBeUndefined()
    }
  })

  it("counts tokens only where the usage gives whole numbers, the total from its parts when it gives none", () => {
    expect(usageTokens({ usage: { prompt_tokens: 5, completion_tokens: 7 } })).toEqual({ promptTokens: 5, completionTokens: 7, totalTokens: 12 })
    expect(usageTokens({ usage: { prompt_tokens: "5", completion_tokens: 1.5, total_tokens: -1 } })).toEqual({
      promptTokens: null,
      completionTokens: null,
      totalTokens: null,
    })
    expect(usageTokens({ choices: [] })).toEqual({ promptTokens: null, completionTokens: null, totalTokens: null })
    expect(usageTokens(null)).toEqual({ promptTokens: null, completionTokens: null, totalTokens: null })
  })
})
