import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { BUCKET_WIDTHS_MS, bucketWidthMs, finalRowsPerSecond, TIMELINE_BUCKETS, timeline } from "../../src/domain/batch/progress.js"

describe("a batch's progress over time", () => {
  it("any span up to 60 days is cut into at most TIMELINE_BUCKETS round spans, the narrowest that does", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 60 * 86_400_000 }), (span) => {
        const width = bucketWidthMs(span)
        expect(Math.ceil(Math.max(span, 1) / width)).toBeLessThanOrEqual(TIMELINE_BUCKETS)
        const narrower = BUCKET_WIDTHS_MS.filter((w) => w < width)
        for (const w of narrower) expect(Math.ceil(span / w)).toBeGreaterThan(TIMELINE_BUCKETS)
      }),
    )
    expect(bucketWidthMs(59_000)).toBe(1000)
    expect(bucketWidthMs(61_000)).toBe(2000)
    expect(bucketWidthMs(3_600_000)).toBe(60_000)
  })

  it("the timeline holds every settled row, each in its bucket, the buckets it is asked for", () => {
    fc.assert(
      fc.property(fc.array(fc.record({ bucket: fc.nat(80), rows: fc.integer({ min: 1, max: 1000 }) })), fc.integer({ min: 1, max: 60 }), (counts, buckets) => {
        const settled = timeline(counts, buckets)
        expect(settled).toHaveLength(buckets)
        expect(settled.reduce((a, b) => a + b, 0)).toBe(counts.reduce((a, c) => a + c.rows, 0))
      }),
    )
  })

  it("a final batch's rate is its rows over the seconds from its first start to its end", () => {
    expect(finalRowsPerSecond(30, 1_000, 11_000)).toBe(3)
    expect(finalRowsPerSecond(1, 5_000, 5_000)).toBe(1000)
    expect(finalRowsPerSecond(0, 5_000, 9_000)).toBe(0)
  })
})
