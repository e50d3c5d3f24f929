import { describe, expect, it } from "vitest"
import type { BatchEvent, RowBodies } from "../../src/domain/batch/events.js"
import { isTerminalRowEvent, publicEvent } from "../../src/domain/batch/publicEvent.js"

const batch_id = "batch_spec"
const at = 1_000

const shown = (event: Exclude<BatchEvent, typeof RowBodies.Type>, customId = "unused") =>
  isTerminalRowEvent(event) ? publicEvent(event, customId) : publicEvent(event)

describe("a batch event as watchers see it", () => {
  it("rows_added keeps each row's custom_id and model, not where its request bodies are stored", () => {
    const event: BatchEvent = {
      type: "rows_added",
      batch_id,
      first: 0,
      rows: [{ custom_id: "q-1", model: "glm-5.3-flash" }],
      bodies: { first_seq: 3, seq: 3 },
    }
    expect(shown(event)).toEqual({ type: "rows_added", batch_id, first: 0, rows: [{ custom_id: "q-1", model: "glm-5.3-flash" }] })
  })

  it("rows_added written with its bodies inline keeps each row's custom_id and model, never its request body", () => {
    const event: BatchEvent = {
      type: "rows_added",
      batch_id,
      first: 256,
      rows: [
        { custom_id: "q-1", model: "glm-5.3-flash", body: { model: "glm-5.3-flash", messages: [{ role: "user", content: "x".repeat(1000) }] } },
        { custom_id: "q-2", model: "qwen3.6-35b", body: { model: "qwen3.6-35b", messages: [] } },
      ],
    }
    expect(shown(event)).toEqual({
      type: "rows_added",
      batch_id,
      first: 256,
      rows: [
        { custom_id: "q-1", model: "glm-5.3-flash" },
        { custom_id: "q-2", model: "qwen3.6-35b" },
      ],
    })
  })

  it("a finished row carries its custom_id besides everything it stored", () => {
    const completed: BatchEvent = {
      type: "row_completed",
      batch_id,
      row: 3,
      attempt: 2,
      at,
      response: { status_code: 200, request_id: "req_1", body: { object: "chat.completion" } },
      cost_usd: 0.002,
    }
    const failed: BatchEvent = { type: "row_failed", batch_id, row: 4, attempt: 1, at, error: { code: "invalid_request", message: "no", status: 400 } }
    const cancelled: BatchEvent = { type: "row_cancelled", batch_id, row: 5, attempt: 1, at, error: null }
    expect(shown(completed, "q-4")).toEqual({ ...completed, custom_id: "q-4" })
    expect(shown(failed, "q-5")).toEqual({ ...failed, custom_id: "q-5" })
    expect(shown(cancelled, "q-6")).toEqual({ ...cancelled, custom_id: "q-6" })
  })

  it("every other event is shown as stored", () => {
    const events: ReadonlyArray<Exclude<BatchEvent, typeof RowBodies.Type>> = [
      { type: "batch_started", batch_id, at },
      { type: "row_started", batch_id, row: 0, attempt: 1, at },
      { type: "row_retrying", batch_id, row: 0, attempt: 1, at, error: { code: "rate_limited", message: "slow down", status: 429 }, retry_at: at + 1000 },
      { type: "batch_cancelling", batch_id, at, cancelled_rows: 7 },
      { type: "batch_failed", batch_id, at, error: { code: "owner_unauthorized", message: "revoked" }, failed_rows: 2 },
      { type: "batch_expired", batch_id, at, expired_rows: 1 },
      { type: "batch_deleted", v: 2, batch_id, at, reason: "deleted" },
    ]
    for (const event of events) expect(shown(event)).toEqual(event)
  })

  it("only row_completed, row_failed and row_cancelled are terminal row events", () => {
    const types = (["row_started", "row_retrying", "row_completed", "row_failed", "row_cancelled"] as const).filter((type) =>
      isTerminalRowEvent({ type, batch_id, row: 0, attempt: 1, at } as BatchEvent),
    )
    expect(types).toEqual(["row_completed", "row_failed", "row_cancelled"])
  })
})
