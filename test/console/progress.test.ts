import { describe, expect, it } from "vitest"
import { eta, Pace } from "../../console/progress.js"

describe("the console's pace and ETA", () => {
  it("reads rows/s over the last window, leaving out settles older than it", () => {
    const pace = new Pace(10_000)
    // Ten settles long ago (the stream's history) and twenty in the last four seconds.
    for (let i = 0; i < 10; i++) pace.settle(i)
    for (let i = 0; i < 20; i++) pace.settle(100_000 + i * 200)
    expect(pace.rate(104_000)).toBe(5)
  })

  it("has no pace from fewer than two settles", () => {
    const pace = new Pace()
    expect(pace.rate(0)).toBe(0)
    pace.settle(0)
    expect(pace.rate(1)).toBe(0)
  })

  it("tells the time left at that pace", () => {
    expect(eta(0, 5)).toBe("done")
    expect(eta(10, 0)).toBe("—")
    expect(eta(50, 5)).toBe("10 s")
    expect(eta(3_000, 10)).toBe("5 min 0 s")
    expect(eta(72_000, 10)).toBe("2 h 0 min")
  })
})
