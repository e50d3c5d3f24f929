import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type LaneTerms, ModelQueue, type Taken } from "../../src/domain/scheduling/ModelQueue.js"
import type { Priority } from "../../src/domain/scheduling/priority.js"
import { START_CUTOFF_MS } from "../../src/domain/scheduling/deadlines.js"
import { HIGH_STARTS, SHARE_CYCLE } from "../../src/domain/scheduling/shares.js"

const NO_DEADLINE = Number.POSITIVE_INFINITY
const always = () => true

interface LaneSpec {
  readonly account: number
  readonly priority: Priority
  readonly rows: number
}

const laneSpec = (priorities: ReadonlyArray<Priority>) =>
  fc.record({ account: fc.nat({ max: 3 }), priority: fc.constantFrom(...priorities), rows: fc.integer({ min: 1, max: 30 }) })

const pushAll = (queue: ModelQueue, lanes: ReadonlyArray<LaneSpec & { readonly startBy?: number }>, from = 0) =>
  lanes.forEach((lane, i) =>
    queue.push(`acct${lane.account}`, `batch${from + i}`, Array.from({ length: lane.rows }, (_, r) => r), {
      priority: lane.priority,
      startBy: lane.startBy ?? NO_DEADLINE,
    } satisfies LaneTerms),
  )

const idle = { now: 0, ratePerMs: () => undefined, backgroundMayRun: true }

describe("ModelQueue: priorities", () => {
  it("standard is never starved: in any SHARE_CYCLE takes while an eligible standard row waited, at least one is standard", () => {
    fc.assert(
      fc.property(
        fc.array(laneSpec(["high", "standard", "background"]), { minLength: 1, maxLength: 12 }),
        fc.array(fc.record({ lanes: fc.array(laneSpec(["high", "standard"]), { maxLength: 3 }), takes: fc.integer({ min: 1, max: 20 }) }), { maxLength: 6 }),
        fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
        (initial, waves, blocked) => {
          const queue = new ModelQueue()
          pushAll(queue, initial)
          // Some accounts may not start now (their slots, their quota): their rows do not want a slot.
          const eligible = (accountId: string) => !blocked[Number(accountId.slice(4))] || accountId === "acct0"
          const waitingStandard = new Map<string, number>()
          const note = (lanes: ReadonlyArray<LaneSpec>, from: number) =>
            lanes.forEach((l, i) => l.priority === "standard" && waitingStandard.set(`batch${from + i}`, l.rows))
          note(initial, 0)
          const accountOf = new Map<string, string>()
          initial.forEach((l, i) => accountOf.set(`batch${i}`, `acct${l.account}`))
          let next = initial.length
          let run = 0
          const step = () => {
            const standardWants = [...waitingStandard].some(([b, n]) => n > 0 && eligible(accountOf.get(b)!))
            const taken = queue.take((a) => eligible(a), idle)
            if (taken === undefined) return false
            if (taken.priority === "standard") waitingStandard.set(taken.batchId, waitingStandard.get(taken.batchId)! - 1)
            if (!standardWants) run = 0
            else if (taken.priority === "standard") run = 0
            else {
              run++
              expect(run).toBeLessThan(SHARE_CYCLE)
            }
            return true
          }
          for (const wave of waves) {
            pushAll(queue, wave.lanes, next)
            note(wave.lanes, next)
            wave.lanes.forEach((l, i) => accountOf.set(`batch${next + i}`, `acct${l.account}`))
            next += wave.lanes.length
            for (let i = 0; i < wave.takes; i++) if (!step()) break
          }
          while (step());
        },
      ),
    )
  })

  it("high gets HIGH_STARTS of every SHARE_CYCLE starts while both wait, standard the rest", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4 }), (highLanes, standardLanes) => {
        const queue = new ModelQueue()
        const rows = 1000
        pushAll(queue, [
          ...Array.from({ length: highLanes }, (_, i) => ({ account: i, priority: "high" as const, rows })),
          ...Array.from({ length: standardLanes }, (_, i) => ({ account: i, priority: "standard" as const, rows })),
        ])
        const counts = { high: 0, standard: 0, background: 0 }
        for (let i = 0; i < 100 * SHARE_CYCLE; i++) counts[queue.take(always, idle)!.priority]++
        expect(counts.high).toBe(100 * HIGH_STARTS)
        expect(counts.standard).toBe(100 * (SHARE_CYCLE - HIGH_STARTS))
      }),
    )
  })

  it("background never takes a slot that other eligible work wanted, nor any while it may not run", () => {
    fc.assert(
      fc.property(
        fc.array(laneSpec(["high", "standard", "background"]), { minLength: 1, maxLength: 12 }),
        fc.array(fc.record({ blocked: fc.nat({ max: 3 }), mayRun: fc.boolean() }), { minLength: 1, maxLength: 200 }),
        (lanes, steps) => {
          const queue = new ModelQueue()
          pushAll(queue, lanes)
          const left = new Map(lanes.map((l, i) => [`batch${i}`, { ...l, left: l.rows }]))
          for (const s of steps) {
            const eligible = (accountId: string) => accountId !== `acct${s.blocked}`
            const othersWant = [...left.values()].some((l) => l.priority !== "background" && l.left > 0 && eligible(`acct${l.account}`))
            const taken: Taken | undefined = queue.take(eligible, { ...idle, backgroundMayRun: s.mayRun })
            if (taken === undefined) {
              const anyEligible = [...left.values()].some((l) => l.left > 0 && eligible(`acct${l.account}`) && (l.priority !== "background" || s.mayRun))
              expect(anyEligible).toBe(false)
              continue
            }
            expect(eligible(taken.accountId)).toBe(true)
            expect(taken.priority).toBe(left.get(taken.batchId)!.priority)
            if (taken.priority === "background") {
              expect(s.mayRun).toBe(true)
              expect(othersWant).toBe(false)
            }
            left.get(taken.batchId)!.left--
          }
        },
      ),
    )
  })
})

/**
 * A model of `slots` slots whose every row holds its slot `durationMs`: the rate the queue is told is
 * exact. Rows whose batch's start-by time passed before they started expire (their batch is dropped, as
 * the service drops a closed batch).
 */
const runModel = (lanes: ReadonlyArray<LaneSpec & { readonly startBy: number }>, slots: number, durationMs: number) => {
  const queue = new ModelQueue()
  pushAll(queue, lanes)
  const starts: Array<{ readonly at: number; readonly batchId: string; readonly startBy: number; readonly early: boolean }> = []
  const left = new Map(lanes.map((l, i) => [`batch${i}`, l.rows]))
  const expired = new Map<string, number>()
  const free: Array<number> = Array.from({ length: slots }, () => 0)
  const context = (now: number) => ({ now, ratePerMs: () => slots / durationMs, backgroundMayRun: true })
  for (;;) {
    free.sort((a, b) => a - b)
    const now = free[0]!
    lanes.forEach((l, i) => {
      const id = `batch${i}`
      if (l.startBy <= now && left.get(id)! > 0 && !expired.has(id)) {
        expired.set(id, left.get(id)!)
        queue.drop(id)
      }
    })
    const taken = queue.take(always, context(now))
    if (taken === undefined) break
    const lane = lanes[Number(taken.batchId.slice(5))]!
    starts.push({ at: now, batchId: taken.batchId, startBy: lane.startBy, early: taken.early })
    left.set(taken.batchId, left.get(taken.batchId)! - 1)
    free[0] = now + durationMs
  }
  return { starts, expired }
}

/** Earliest-deadline-first, from the same start: the order that keeps every deadline any order keeps. */
const edfExpires = (lanes: ReadonlyArray<LaneSpec & { readonly startBy: number }>, slots: number, durationMs: number) => {
  const rows = lanes
    .filter((l) => l.priority !== "background")
    .flatMap((l) => Array.from({ length: l.rows }, () => l.startBy))
    .sort((a, b) => a - b)
  return rows.some((startBy, k) => Math.floor(k / slots) * durationMs >= startBy)
}

const deadlineLanes = fc.array(
  fc.record({
    account: fc.nat({ max: 3 }),
    priority: fc.constantFrom<Priority>("high", "standard"),
    rows: fc.integer({ min: 1, max: 40 }),
    // Minutes to a day, in seconds' steps.
    startBy: fc.integer({ min: 60, max: 86_400 }).map((s) => s * 1000),
  }),
  { minLength: 1, maxLength: 10 },
)

describe("ModelQueue: deadlines", () => {
  it("no row expires while a row of a later deadline started before it, at the measured rate", () => {
    fc.assert(
      fc.property(deadlineLanes, fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 120 }), (lanes, slots, seconds) => {
        const { starts, expired } = runModel(lanes, slots, seconds * 1000)
        for (const [batchId] of expired) {
          const startBy = lanes[Number(batchId.slice(5))]!.startBy
          const later = starts.find((s) => s.at < startBy && s.startBy > startBy)
          expect(later, `${batchId} expired at ${startBy} while ${later?.batchId} (start-by ${later?.startBy}) started at ${later?.at}`).toBeUndefined()
        }
      }),
    )
  })

  it("whatever earliest-deadline-first keeps, the queue keeps: no row expires when EDF would start every one in time", () => {
    fc.assert(
      fc.property(deadlineLanes, fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 120 }), (lanes, slots, seconds) => {
        fc.pre(!edfExpires(lanes, slots, seconds * 1000))
        expect([...runModel(lanes, slots, seconds * 1000).expired]).toEqual([])
      }),
    )
  })

  it("no row starts within START_CUTOFF_MS of its start-by time, and every other row still starts", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ account: fc.nat({ max: 3 }), priority: fc.constantFrom<Priority>("high", "standard", "background"), rows: fc.integer({ min: 1, max: 5 }), startBy: fc.integer({ min: 0, max: 3_000 }) }), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 0, max: 3_000 }),
        (lanes, now) => {
          const queue = new ModelQueue()
          pushAll(queue, lanes)
          const context = { now, ratePerMs: () => 0.001, backgroundMayRun: true }
          const taken = new Map<string, number>()
          for (let t = queue.take(always, context); t !== undefined; t = queue.take(always, context)) taken.set(t.batchId, (taken.get(t.batchId) ?? 0) + 1)
          lanes.forEach((lane, i) => {
            const late = lane.startBy - now <= START_CUTOFF_MS
            expect(taken.get(`batch${i}`) ?? 0, `start-by ${lane.startBy}, now ${now}`).toBe(late ? 0 : lane.rows)
          })
        },
      ),
    )
  })

  it("a deadline far beyond the queue changes nothing: the turns run as without it", () => {
    fc.assert(
      fc.property(fc.array(laneSpec(["high", "standard", "background"]), { minLength: 1, maxLength: 10 }), (lanes) => {
        const withDeadlines = new ModelQueue()
        const without = new ModelQueue()
        pushAll(withDeadlines, lanes.map((l) => ({ ...l, startBy: 86_400_000 })))
        pushAll(without, lanes)
        const context = { now: 0, ratePerMs: () => 1, backgroundMayRun: true }
        for (;;) {
          const a = withDeadlines.take(always, context)
          const b = without.take(always, context)
          expect(a).toEqual(b)
          if (a === undefined) break
        }
      }),
    )
  })
})
