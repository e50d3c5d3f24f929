import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { batchReads } from "../../src/projections/batchReads.js"
import { makeApplier } from "../../src/projections/Projector.js"
import { batchId } from "../domain/arbitraries/batchCommands.js"
import { asMessages, messyLog, messyScenario, withReadModel } from "../support/messyBatchLog.js"

/*
 * Readers are given batch rows from a cache (src/projections/batchRowCache.ts) that the batches
 * projection empties of a batch whenever it writes its row. Law: after every window of any log (the
 * decider's own with stale, repeated and foreign-view events slipped in, deletions and purges among
 * them), a read through the cache equals the row as SQLite holds it, though the batch was read (and
 * kept) before the window was applied.
 */

describe("the batch rows readers are given", () => {
  it("equal the row SQLite holds after every window of any log, though read and kept before it", () => {
    let changedUnderCache = 0
    fc.assert(
      fc.property(messyScenario, ([s, extra, windows]) =>
        withReadModel((db) => {
          const apply = makeApplier(db)
          const reads = batchReads(db)
          const stored = db.prepare(`SELECT * FROM batches WHERE id = ?`)
          const events = messyLog(s.total, [...s.steps], extra)
          let next = 0
          for (let w = 0; next < events.length; w++) {
            const size = windows[w % windows.length]!
            const before = reads.one(batchId)
            const window = asMessages(events.slice(next, next + size), next + 1)
            expect(apply(window)).toEqual([])
            next += size
            const after = reads.one(batchId)
            expect(after).toEqual(stored.get(batchId))
            if (before !== undefined && JSON.stringify(before) !== JSON.stringify(after)) changedUnderCache++
          }
        }),
      ),
      { numRuns: 200 },
    )
    // Rows did change while a read of them was kept: the law was not met only by rows that never moved.
    expect(changedUnderCache).toBeGreaterThan(0)
  })

  it("are shared frozen, and one read inside a transaction is not kept", () =>
    withReadModel((db) => {
      const apply = makeApplier(db)
      // A created batch of two rows, nothing run.
      apply(asMessages(messyLog(2, [], []), 1))
      const reads = batchReads(db)
      const inside = db.transaction(() => {
        const row = reads.one(batchId)!
        db.prepare(`UPDATE batches SET total = 7 WHERE id = ?`).run(batchId)
        return row
      })
      expect(Object.isFrozen(inside())).toBe(false)
      // Written around the projection (as the read model's own migrations do): the row read in the transaction was not kept.
      const kept = reads.one(batchId)!
      expect(kept.total).toBe(7)
      expect(Object.isFrozen(kept)).toBe(true)
      expect(reads.one(batchId)).toBe(kept)
    }))
})
