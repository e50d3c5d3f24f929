import { describe, expect, it } from "vitest"
import type { ModelSnapshot } from "../../src/metrics/Metrics.js"
import { historyRing } from "../../src/http/modelHistory.js"

const snapshot = (model: string, slotsInUse: number, slotsLimit: number): ModelSnapshot => ({
  model,
  batchConcurrency: slotsLimit,
  concurrency: slotsLimit,
  slotsLimit,
  slotsInUse,
  running: slotsInUse,
  queuedByAccount: new Map(),
  queuedByPriority: new Map(),
  interactiveInFlight: 0,
  leaseOwner: "here",
})

describe("a model's last hour", () => {
  it("samples starts per second from the counter's growth over the span, and the slots' mean over the looks", () => {
    const ring = historyRing()
    ring.close(0, new Map([["m", 5]]))
    for (const inUse of [0, 1, 2, 1]) ring.look([snapshot("m", inUse, 2)])
    ring.close(10_000, new Map([["m", 30]]))
    expect(ring.read()).toEqual([{ model: "m", samples: [{ at: 10_000, starts: 25, starts_per_second: 2.5, slots_in_use: 1, slots_limit: 2 }] }])
  })

  it("the first span only sets the baseline, and the ring keeps the newest samples it holds room for", () => {
    const ring = historyRing(3)
    ring.look([snapshot("m", 1, 1)])
    ring.close(0, new Map([["m", 100]]))
    expect(ring.read()).toEqual([])
    for (let i = 1; i <= 5; i++) {
      ring.look([snapshot("m", 1, 1)])
      ring.close(i * 10_000, new Map([["m", 100 + i * 10]]))
    }
    const samples = ring.read()[0]!.samples
    expect(samples.map((s) => s.at)).toEqual([30_000, 40_000, 50_000])
    expect(samples.every((s) => s.starts === 10)).toBe(true)
  })
})
