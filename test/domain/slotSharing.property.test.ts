import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  type LoadReport,
  type SlotSharing,
  UNACKED_GROWTH,
  elsewhere,
  initialSharing,
  leavingReport,
  mayTake,
  ownCeiling,
  nextReport,
  received,
} from "../../src/domain/account/slotSharing.js"

/*
 * Instances that share one account's slots through reports in one ordered log (a JetStream stream
 * that keeps every report for the TTL, so each reader reads all of them in the log's order, each at
 * its own pace). Nothing here waits for anything: every interleaving of starts, ends, reports and
 * reads that fast-check draws is one the real instances could meet.
 */
const TTL = Number.POSITIVE_INFINITY
const ACCOUNT = "acct"

interface Instance {
  state: SlotSharing
  inFlight: number
  joined: boolean
  read: number
}

type Step =
  | { readonly kind: "start" | "end" | "report" | "read" | "join"; readonly at: number }

const world = (k: number) => {
  const log: Array<LoadReport> = []
  const instances: Array<Instance> = Array.from({ length: k }, (_, i) => ({
    state: initialSharing(`i${i}`, `life-${i}`),
    inFlight: 0,
    joined: false,
    read: 0,
  }))
  const report = (x: Instance) => {
    const [state, sent] = nextReport(x.state, x.inFlight > 0 ? { [ACCOUNT]: x.inFlight } : {}, {})
    x.state = state
    log.push(sent)
  }
  const join = (x: Instance) => {
    if (x.joined) return
    x.joined = true
    report(x)
  }
  const readOne = (x: Instance) => {
    if (x.joined && x.read < log.length) x.state = received(x.state, log[x.read++]!, 0).state
  }
  const take = (x: Instance, concurrency: number) => {
    if (x.joined && mayTake(x.state, ACCOUNT, x.inFlight, concurrency, 0, TTL)) x.inFlight++
  }
  return { log, instances, report, join, readOne, take }
}

const steps = (k: number) =>
  fc.array(
    fc.record({
      kind: fc.constantFrom("start", "start", "start", "end", "report", "report", "read", "read", "read", "join") as fc.Arbitrary<Step["kind"]>,
      at: fc.nat(k - 1),
    }),
    { minLength: 20, maxLength: 200, size: "max" },
  )

describe("an account's slots shared by instances through reports", () => {
  it("with K instances the account never has more than concurrency + (K - 1) * UNACKED_GROWTH requests in flight", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 4 }).chain((k) => fc.tuple(fc.constant(k), fc.integer({ min: 1, max: 6 }), steps(k))),
        ([k, concurrency, plan]) => {
          const w = world(k)
          for (const step of plan) {
            const x = w.instances[step.at]!
            switch (step.kind) {
              case "join":
                w.join(x)
                break
              case "start":
                w.take(x, concurrency)
                break
              case "end":
                if (x.inFlight > 0) x.inFlight--
                break
              case "report":
                if (x.joined) w.report(x)
                break
              case "read":
                w.readOne(x)
                break
            }
            const total = w.instances.reduce((n, i) => n + i.inFlight, 0)
            expect(total).toBeLessThanOrEqual(concurrency + (k - 1) * UNACKED_GROWTH)
          }
        },
      ),
      { numRuns: 2_000 },
    )
  })

  it("a stopping instance's last report lets the others forget it: its counts and acknowledgements no longer hold them back", () => {
    const w = world(2)
    const [stays, leaves] = w.instances as [Instance, Instance]
    w.join(stays)
    w.join(leaves)
    for (const x of w.instances) while (x.read < w.log.length) w.readOne(x)
    w.take(leaves, 3)
    w.report(leaves)
    while (stays.read < w.log.length) w.readOne(stays)
    expect(elsewhere(stays.state, ACCOUNT)).toBe(1)
    expect(ownCeiling(stays.state, ACCOUNT, 0, TTL)).toBe(UNACKED_GROWTH)
    w.log.push(leavingReport(leaves.state))
    w.readOne(stays)
    expect(elsewhere(stays.state, ACCOUNT)).toBe(0)
    expect(ownCeiling(stays.state, ACCOUNT, 0, TTL)).toBe(Number.POSITIVE_INFINITY)
  })

  it("an instance alone starts nothing before it has read its own report back, then up to the account's concurrency", () => {
    const w = world(1)
    const x = w.instances[0]!
    w.join(x)
    w.take(x, 3)
    expect(x.inFlight).toBe(0)
    w.readOne(x)
    for (let i = 0; i < 5; i++) w.take(x, 3)
    expect(x.inFlight).toBe(3)
  })

  it("beside an idle instance, one fills the account's concurrency in rounds of reports and acknowledgements", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), (concurrency) => {
        const w = world(2)
        const [busy, idle] = w.instances as [Instance, Instance]
        w.join(busy)
        w.join(idle)
        const settle = () => {
          for (let changed = true; changed; ) {
            changed = false
            for (const x of w.instances) {
              while (x.read < w.log.length) {
                const r = received(x.state, w.log[x.read++]!, 0)
                x.state = r.state
                if (r.acknowledge) {
                  w.report(x)
                  changed = true
                }
              }
            }
          }
        }
        settle()
        for (let round = 0; round <= concurrency; round++) {
          for (let i = 0; i < concurrency; i++) w.take(busy, concurrency)
          w.report(busy)
          settle()
        }
        expect(busy.inFlight).toBe(concurrency)
        for (let i = 0; i < 3; i++) w.take(idle, concurrency)
        expect(idle.inFlight).toBe(0)
      }),
    )
  })
})
