import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { initialLogHealth, type LogHealthState, type LogVerdict, observeLog } from "../../src/domain/log/logHealth.js"

/** Operations begun in order 0…n-1 and ending in any order, each with a verdict: the order they end in. */
const endings = fc
  .array(fc.boolean(), { minLength: 1, maxLength: 30 })
  .chain((oks) => fc.shuffledSubarray(oks.map((ok, begun) => ({ begun, ok })), { minLength: 1, maxLength: oks.length }))

const verdictOf = (ok: boolean, begun: number): LogVerdict => (ok ? { ok: true } : { ok: false, why: `op ${begun} failed` })

const run = (ends: ReadonlyArray<{ begun: number; ok: boolean }>) => {
  let state: LogHealthState = initialLogHealth
  const states: Array<LogHealthState> = []
  ends.forEach(({ begun, ok }, t) => {
    state = observeLog(state, begun, verdictOf(ok, begun), t)
    states.push(state)
  })
  return states
}

describe("the log's health, from operations that end out of order", () => {
  it("is always the verdict of the latest-begun operation that has ended", () => {
    fc.assert(
      fc.property(endings, (ends) => {
        const states = run(ends)
        ends.forEach((_, t) => {
          const latest = ends.slice(0, t + 1).reduce((a, b) => (b.begun > a.begun ? b : a))
          expect(states[t]!.down).toBe(latest.ok ? undefined : `op ${latest.begun} failed`)
        })
      }),
    )
  })

  it("keeps the time it went down while it stays down, and forgets it once up", () => {
    fc.assert(
      fc.property(endings, (ends) => {
        const states = run(ends)
        states.forEach((s, t) => {
          if (s.down === undefined) return expect(s.since).toBeUndefined()
          const wasDown = t > 0 && states[t - 1]!.down !== undefined
          expect(s.since).toBe(wasDown ? states[t - 1]!.since : t)
        })
      }),
    )
  })

  it("a probe sent before a reset that times out after the reconnected log answered changes nothing", () => {
    let state = observeLog(initialLogHealth, 7, { ok: true }, 100)
    state = observeLog(state, 6, { ok: false, why: "the event log did not answer within 3s" }, 101)
    expect(state.down).toBeUndefined()
  })
})
