import fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { LaneWindow } from "../../src/domain/batch/laneWindow.js"
import type { LogMessage } from "../../src/eventlog/EventLog.js"
import { makeWrittenWindows } from "../../src/projections/writtenWindows.js"

const windowOf = (seq: number): LaneWindow => ({ type: "lane_window", batch_id: `b${seq}`, model: "m", owner: "o", lease: 1, events: [] })
const subjectOf = (seq: number) => `batch.b${seq % 3}.lane.m`
const messageAt = (seq: number): LogMessage => ({ seq, subject: subjectOf(seq), data: new Uint8Array(), time: 0 })

/**
 * The projections read the log in seq order while the writers hand over the windows they appended, in
 * any order, some before their message is read and some after (an append's answer may come after the
 * projections read it), a few named with a subject the log does not hold at that seq. A message read
 * gets the window handed over for its seq and subject before it was read (and not before a rebuild
 * made the projections forget them), and otherwise nothing: never another message's window, nor one
 * handed over too late.
 */
describe("writtenWindows", () => {
  it("answers a message read the window written as it, or nothing", () => {
    const step = fc.oneof(
      fc.record({ wrote: fc.integer({ min: 1, max: 40 }), sameSubject: fc.boolean() }),
      fc.record({ read: fc.constant(true) }),
      fc.record({ forget: fc.constant(true) }),
    )
    fc.assert(
      fc.property(fc.array(step, { maxLength: 120 }), (steps) => {
        const windows = makeWrittenWindows()
        const handed = new Map<number, boolean>()
        let read = 0
        for (const s of steps) {
          if ("forget" in s) {
            // The projections are rebuilt: what was handed over before is not used.
            windows.forget()
            for (const seq of handed.keys()) handed.set(seq, false)
            continue
          }
          if ("wrote" in s) {
            if (handed.has(s.wrote)) continue
            windows.wrote(s.wrote, s.sameSubject ? subjectOf(s.wrote) : `${subjectOf(s.wrote)}.x`, windowOf(s.wrote))
            handed.set(s.wrote, s.wrote > read && s.sameSubject)
            continue
          }
          read++
          const taken = windows.take(messageAt(read))
          if (handed.get(read) === true) expect(taken, `seq ${read}`).toEqual(windowOf(read))
          else expect(taken, `seq ${read}`).toBeUndefined()
        }
      }),
      { numRuns: 500 },
    )
  })
})
