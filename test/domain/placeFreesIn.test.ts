import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { secondsUntilAPlaceFrees, type UnfinishedBatch } from "../../src/domain/batch/placeFreesIn.js"

const now = 1_700_000_000_000
const batch = (b: Partial<UnfinishedBatch>): UnfinishedBatch => ({
  total: 10,
  settled: 0,
  createdAt: now,
  expiresAt: now + 86_400_000,
  closed: false,
  ...b,
})

describe("how long until an unfinished batch frees a place", () => {
  it("the rows left at the pace the batch has settled rows so far", () => {
    expect(secondsUntilAPlaceFrees([batch({ settled: 4, createdAt: now - 40_000 })], now)).toBe(60)
  })

  it("the soonest of the account's batches", () => {
    const slow = batch({ settled: 1, createdAt: now - 100_000 })
    const fast = batch({ settled: 9, createdAt: now - 9_000 })
    expect(secondsUntilAPlaceFrees([slow, fast], now)).toBe(1)
    expect(secondsUntilAPlaceFrees([slow, batch({ settled: 5, createdAt: now - 50_000 })], now)).toBe(50)
  })

  it("no later than an open batch's window, when its idle rows expire; a closed one has no window left", () => {
    expect(secondsUntilAPlaceFrees([batch({ settled: 1, createdAt: now - 100_000, expiresAt: now + 30_000 })], now)).toBe(30)
    expect(secondsUntilAPlaceFrees([batch({ settled: 1, createdAt: now - 100_000, expiresAt: now + 30_000, closed: true })], now)).toBe(900)
  })

  it("with no batch's pace known yet, a few seconds, as a poll; a window closing sooner still bounds it", () => {
    expect(secondsUntilAPlaceFrees([batch({ expiresAt: now + 3_600_000 })], now)).toBe(5)
    expect(secondsUntilAPlaceFrees([batch({ closed: true })], now)).toBe(5)
    expect(secondsUntilAPlaceFrees([batch({ expiresAt: now + 2_000 })], now)).toBe(2)
    expect(secondsUntilAPlaceFrees([], now)).toBe(5)
  })

  it("never less than 1 second, in whole seconds", () => {
    const anyBatch = fc.record({
      total: fc.integer({ min: 1, max: 50_000 }),
      settled: fc.nat(50_000),
      createdAt: fc.integer({ min: now - 86_400_000, max: now }),
      expiresAt: fc.integer({ min: now - 3_600_000, max: now + 86_400_000 }),
      closed: fc.boolean(),
    })
    fc.assert(
      fc.property(fc.array(anyBatch, { maxLength: 10 }), (batches) => {
        const seconds = secondsUntilAPlaceFrees(batches.map((b) => ({ ...b, settled: Math.min(b.settled, b.total) })), now)
        expect(Number.isInteger(seconds)).toBe(true)
        expect(seconds).toBeGreaterThanOrEqual(1)
      }),
    )
  })
})
