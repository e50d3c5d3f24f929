import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { FairQueue, type QueuedRow } from "../../src/domain/scheduling/FairQueue.js"

type Step = { readonly kind: "push"; readonly account: number; readonly batch: number; readonly rows: number } | { readonly kind: "take" }

const steps = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constant("push" as const), account: fc.nat(3), batch: fc.nat(3), rows: fc.integer({ min: 1, max: 6 }) }),
    fc.constant({ kind: "take" as const }),
    fc.constant({ kind: "take" as const }),
  ),
  { maxLength: 300 },
)

/** Runs the steps, then drains; records every take with who was backlogged just before it. */
const run = (script: ReadonlyArray<Step>) => {
  const queue = new FairQueue()
  const pending = new Map<string, number>() // batch → rows waiting
  const pushed = new Map<string, Array<number>>()
  const takes: Array<{ taken: QueuedRow; backlogged: Map<string, Set<string>> }> = []
  let nextRow = 0
  const snapshot = () => {
    const byAccount = new Map<string, Set<string>>()
    for (const [batch, n] of pending) {
      if (n === 0) continue
      const account = batch.split("/")[0]!
      if (!byAccount.has(account)) byAccount.set(account, new Set())
      byAccount.get(account)!.add(batch)
    }
    return byAccount
  }
  const take = () => {
    const backlogged = snapshot()
    const taken = queue.take()
    if (taken === undefined) return false
    pending.set(taken.batchId, pending.get(taken.batchId)! - 1)
    takes.push({ taken, backlogged })
    return true
  }
  for (const step of script) {
    if (step.kind === "take") take()
    else {
      const account = `a${step.account}`
      const batch = `${account}/b${step.batch}`
      const rows = Array.from({ length: step.rows }, () => nextRow++)
      queue.push(account, batch, rows)
      pending.set(batch, (pending.get(batch) ?? 0) + rows.length)
      pushed.set(batch, [...(pushed.get(batch) ?? []), ...rows])
    }
  }
  while (take()) {}
  return { queue, pushed, takes }
}

describe("FairQueue", () => {
  it("every pushed row is taken exactly once, and each batch's rows in the order pushed", () =>
    fc.assert(
      fc.property(steps, (script) => {
        const { queue, pushed, takes } = run(script)
        expect(queue.size).toBe(0)
        for (const [batch, rows] of pushed) {
          expect(takes.filter((t) => t.taken.batchId === batch).map((t) => t.taken.row)).toEqual(rows)
        }
      }),
      { numRuns: 300 },
    ))

  it("between two rows of a backlogged account, every other backlogged account starts at most one row", () =>
    fc.assert(
      fc.property(steps, (script) => {
        const { takes } = run(script)
        for (let i = 0; i < takes.length; i++) {
          const account = takes[i]!.taken.accountId
          const j = takes.findIndex((t, k) => k > i && t.taken.accountId === account)
          if (j < 0) continue
          // Only intervals where the account stayed backlogged, and others were backlogged throughout.
          const between = takes.slice(i + 1, j)
          if (!between.every((t) => t.backlogged.has(account))) continue
          const counts = new Map<string, number>()
          for (const t of between) counts.set(t.taken.accountId, (counts.get(t.taken.accountId) ?? 0) + 1)
          for (const n of counts.values()) expect(n).toBeLessThanOrEqual(1)
        }
      }),
      { numRuns: 300 },
    ))

  it("between two rows of a backlogged batch, every other account starts at most as many rows as the batch's account has backlogged batches", () =>
    fc.assert(
      fc.property(steps, (script) => {
        const { takes } = run(script)
        for (let i = 0; i < takes.length; i++) {
          const { batchId, accountId } = takes[i]!.taken
          const j = takes.findIndex((t, k) => k > i && t.taken.batchId === batchId)
          if (j < 0) continue
          const between = takes.slice(i + 1, j)
          if (!between.every((t) => t.backlogged.get(accountId)?.has(batchId) === true)) continue
          const siblings = Math.max(...between.map((t) => t.backlogged.get(accountId)!.size), 1)
          const counts = new Map<string, number>()
          for (const t of between) if (t.taken.accountId !== accountId) counts.set(t.taken.accountId, (counts.get(t.taken.accountId) ?? 0) + 1)
          for (const n of counts.values()) expect(n).toBeLessThanOrEqual(siblings)
        }
      }),
      { numRuns: 300 },
    ))

  it("a large batch does not hold up a smaller one pushed after it", () => {
    const queue = new FairQueue()
    queue.push("a", "big", Array.from({ length: 1000 }, (_, i) => i))
    queue.take()
    queue.push("b", "small", [0, 1, 2])
    const next = Array.from({ length: 6 }, () => queue.take()!.batchId)
    expect(next.filter((b) => b === "small")).toHaveLength(3)
  })

  it("an account that may not run now is passed over, and served again once it may", () => {
    const queue = new FairQueue()
    queue.push("paused", "p", [0, 1])
    queue.push("busy", "q", [0, 1])
    expect(queue.take((account) => account !== "paused")).toEqual({ accountId: "busy", batchId: "q", row: 0 })
    expect(queue.take((account) => account !== "paused")).toEqual({ accountId: "busy", batchId: "q", row: 1 })
    expect(queue.take((account) => account !== "paused")).toBeUndefined()
    expect(queue.take()).toEqual({ accountId: "paused", batchId: "p", row: 0 })
  })

  it("a dropped batch's rows are gone and the others go on", () => {
    const queue = new FairQueue()
    queue.push("a", "x", [0, 1, 2])
    queue.push("a", "y", [0])
    queue.drop("x")
    expect(queue.size).toBe(1)
    expect(queue.take()).toEqual({ accountId: "a", batchId: "y", row: 0 })
    expect(queue.take()).toBeUndefined()
  })
})

describe("the queue's sizes by account", () => {
  it("count each account's rows still waiting, over all its batches", () => {
    const queue = new FairQueue()
    queue.push("a", "a1", [0, 1, 2])
    queue.push("a", "a2", [0])
    queue.push("b", "b1", [0, 1])
    queue.take()
    queue.drop("a2")
    const sizes = queue.sizesByAccount()
    let total = 0
    for (const n of sizes.values()) total += n
    expect(total).toBe(queue.size)
    expect(sizes.get("b")! + sizes.get("a")!).toBe(4)
    queue.drop("a1")
    queue.drop("b1")
    expect(queue.sizesByAccount()).toEqual(new Map())
  })
})
