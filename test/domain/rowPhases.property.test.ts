import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type RowPhase, RowPhases } from "../../src/domain/batch/rowPhases.js"

const phaseOf = (attempt: number, status: number): RowPhase =>
  status === 0 ? { status: "running", attempt } : status === 1 ? { status: "completed", attempt } : { status: "queued", attempt, error: { code: "c", message: "m" } }

/**
 * Versions made from any earlier version, in any order, each read again at random: every version answers
 * exactly what a copied Map made the same way would, however often the one Map moved between them.
 */
describe("RowPhases", () => {
  it("every version answers as it was made, whichever version was changed or read since", () => {
    const step = fc.oneof(
      fc.record({ from: fc.nat(), row: fc.integer({ min: 0, max: 12 }), attempt: fc.integer({ min: 1, max: 3 }), status: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ read: fc.nat(), row: fc.integer({ min: 0, max: 12 }) }),
      fc.record({ whole: fc.nat() }),
    )
    fc.assert(
      fc.property(fc.array(step, { maxLength: 150 }), (steps) => {
        const versions: Array<RowPhases> = [RowPhases.empty()]
        const models: Array<Map<number, RowPhase>> = [new Map()]
        for (const s of steps) {
          if ("from" in s) {
            const at = s.from % versions.length
            const phase = phaseOf(s.attempt, s.status)
            versions.push(versions[at]!.set(s.row, phase))
            models.push(new Map(models[at]!).set(s.row, phase))
          } else if ("read" in s) {
            const at = s.read % versions.length
            expect(versions[at]!.get(s.row)).toEqual(models[at]!.get(s.row))
          } else {
            const at = s.whole % versions.length
            expect(versions[at]!.size).toBe(models[at]!.size)
            expect([...versions[at]!].sort(([a], [b]) => a - b)).toEqual([...models[at]!].sort(([a], [b]) => a - b))
          }
        }
        versions.forEach((v, i) => expect(new Map(v)).toEqual(models[i]))
      }),
      { numRuns: 500 },
    )
  })
})
