import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { isRowEvent } from "../../src/domain/batch/events.js"
import { lifecycleSeqReads } from "../../src/projections/lifecycleSeq.js"
import { makeApplier } from "../../src/projections/Projector.js"
import { asMessages, messyLog, messyScenario, withReadModel } from "../support/messyBatchLog.js"

/*
 * The read model's lifecycle sequence (what a front's kept facts are checked against) is the sequence
 * of the last event applied that was not a row's progress, after every window of any log: it moves with
 * each created, closing, final or deleted event, and row events, most of the log, leave it.
 */
describe("the read model's lifecycle sequence", () => {
  it("is the last lifecycle event's sequence after every window, whatever row events come between", () => {
    let moved = 0
    let heldThroughRows = 0
    fc.assert(
      fc.property(messyScenario, ([s, extra, windows]) =>
        withReadModel((db) => {
          const apply = makeApplier(db)
          const lifecycleSeq = lifecycleSeqReads(db)
          const events = messyLog(s.total, [...s.steps], extra)
          let expected = 0
          let next = 0
          for (let w = 0; next < events.length; w++) {
            const size = windows[w % windows.length]!
            const window = events.slice(next, next + size)
            const before = expected
            window.forEach((event, i) => {
              if (!isRowEvent(event)) expected = next + 1 + i
            })
            expect(apply(asMessages(window, next + 1))).toEqual([])
            next += size
            expect(lifecycleSeq()).toBe(expected)
            if (expected !== before) moved++
            else if (window.some(isRowEvent)) heldThroughRows++
          }
        }),
      ),
      { numRuns: 100 },
    )
    // Both cases were met, not only one.
    expect(moved).toBeGreaterThan(0)
    expect(heldThroughRows).toBeGreaterThan(0)
  })
})
