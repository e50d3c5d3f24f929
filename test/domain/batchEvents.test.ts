import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { BatchEvent } from "../../src/domain/batch/events.js"

const decode = Schema.decodeUnknownEither(BatchEvent)
const rowsAdded = (rows: unknown) => ({ type: "rows_added", batch_id: "batch_1", first: 0, rows })

describe("rows_added as the log stores it", () => {
  it("decodes rows with their ids and models, with or without an inline body, unchanged", () => {
    const rows = [{ custom_id: "a", model: "m" }, { custom_id: "b", model: "m", body: { messages: [] } }]
    const decoded = decode({ ...rowsAdded(rows), bodies: { first_seq: 3, seq: 4 } })
    expect(Either.getOrThrow(decoded)).toEqual({ ...rowsAdded(rows), bodies: { first_seq: 3, seq: 4 } })
  })

  it.each([
    ["a row without a custom_id", [{ custom_id: "a", model: "m" }, { model: "m" }]],
    ["a row whose model is not a string", [{ custom_id: "a", model: 7 }]],
    ["a row that is not an object", [null]],
    ["rows that are not an array", { custom_id: "a", model: "m" }],
  ])("refuses %s", (_, rows) => {
    expect(Either.isLeft(decode(rowsAdded(rows)))).toBe(true)
  })
})
