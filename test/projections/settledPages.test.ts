import { Context, Effect, Exit, Layer, Scope } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { ReadModel } from "../../src/projections/ReadModel.js"
import { resultReads } from "../../src/projections/resultReads.js"

/** A read model in memory with one batch of `n` queued rows, written as the results projection writes them. */
const withBatch = (n: number) => {
  const scope = Effect.runSync(Scope.make())
  const db = Context.get(Effect.runSync(Layer.buildWithScope(ReadModel.layer(":memory:"), scope)), ReadModel)
  const insert = db.prepare(`INSERT INTO results (batch_id, idx, custom_id, model, status) VALUES ('b', ?, ?, 'm', 'queued')`)
  for (let i = 0; i < n; i++) insert.run(i, `row-${i}`)
  const settle = db.prepare(`UPDATE results SET status = ?, response = ? WHERE batch_id = 'b' AND idx = ?`)
  return { db, settle: (idx: number, status: string, response: string | null) => settle.run(status, response, idx), close: () => Effect.runSync(Scope.close(scope, Exit.void)) }
}

describe("a results page", () => {
  let close: (() => void) | undefined
  afterEach(() => close?.())

  it("shows each row as it settles until all of the page's rows have, then the same text", () => {
    const batch = withBatch(5)
    close = batch.close
    const reads = resultReads(batch.db)
    const statuses = () => (JSON.parse(reads.pageJson("b", 0, 3)) as { data: Array<{ status: string }> }).data.map((r) => r.status)
    expect(statuses()).toEqual(["queued", "queued", "queued"])
    batch.settle(0, "completed", `{"n":0}`)
    batch.settle(1, "running", null)
    expect(statuses()).toEqual(["completed", "running", "queued"])
    batch.settle(1, "failed", null)
    batch.settle(2, "cancelled", null)
    const settled = reads.pageJson("b", 0, 3)
    expect(statuses()).toEqual(["completed", "failed", "cancelled"])
    expect(JSON.parse(settled).has_more).toBe(true)
    // Another page of the same batch, and a filtered one, are read on their own.
    expect((JSON.parse(reads.pageJson("b", 3, 3)) as { data: Array<{ status: string }> }).data.map((r) => r.status)).toEqual(["queued", "queued"])
    batch.settle(3, "completed", `{"n":3}`)
    expect((JSON.parse(reads.pageJson("b", 3, 3)) as { data: Array<{ status: string }> }).data.map((r) => r.status)).toEqual(["completed", "queued"])
    expect((JSON.parse(reads.pageJson("b", 0, 10, { status: "completed" })) as { data: Array<{ id: string }> }).data.map((r) => r.id)).toEqual([
      "batch_req_1",
      "batch_req_4",
    ])
    expect(reads.pageJson("b", 0, 3)).toBe(settled)
  })
})
