import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { FairQueue } from "../../src/domain/scheduling/FairQueue.js"
import { ModelQueue } from "../../src/domain/scheduling/ModelQueue.js"
import type { Priority } from "../../src/domain/scheduling/priority.js"
import { HIGH_STARTS } from "../../src/domain/scheduling/shares.js"
import { finishesAt, type QueuedBatch, rowsAhead } from "../../src/domain/scheduling/turnsAhead.js"

/** Rows of other batches the FairQueue really starts before `target`'s last row, the target pushed last. */
const simulated = (queue: ReadonlyArray<QueuedBatch>, target: QueuedBatch): number => {
  const fair = new FairQueue()
  for (const b of [...queue, target]) fair.push(b.accountId, b.batchId, Array.from({ length: b.queued }, (_, i) => i))
  let ahead = 0
  for (let left = target.queued; left > 0; ) {
    const next = fair.take()!
    if (next.batchId === target.batchId) left--
    else ahead++
  }
  return ahead
}

const queueArb = fc
  .array(fc.record({ account: fc.integer({ min: 0, max: 3 }), queued: fc.integer({ min: 0, max: 20 }) }), { maxLength: 8 })
  .map((bs) => bs.map((b, i): QueuedBatch => ({ accountId: `a${b.account}`, batchId: `b${i}`, queued: b.queued, running: 0 })))

/** The same with priorities: what a model's queue starts first. */
const simulatedByPriority = (queue: ReadonlyArray<QueuedBatch>, target: QueuedBatch): number => {
  const model = new ModelQueue()
  for (const b of [...queue, target]) {
    model.push(b.accountId, b.batchId, Array.from({ length: b.queued }, (_, i) => i), { priority: b.priority ?? "standard", startBy: Infinity })
  }
  const context = { now: 0, ratePerMs: () => undefined, backgroundMayRun: true }
  let ahead = 0
  for (let left = target.queued; left > 0; ) {
    const next = model.take(() => true, context)!
    if (next.batchId === target.batchId) left--
    else ahead++
  }
  return ahead
}

const priorityArb = fc.constantFrom<Priority>("high", "standard", "background")

describe("rows ahead by the turns", () => {
  it("with priorities, matches what the model's queue starts first, within the cursors' favour per account", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ account: fc.integer({ min: 0, max: 3 }), queued: fc.integer({ min: 0, max: 20 }), priority: priorityArb }), { maxLength: 8 }),
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 1, max: 20 }),
        priorityArb,
        (bs, account, queued, priority) => {
          const queue = bs.map((b, i): QueuedBatch => ({ accountId: `a${b.account}`, batchId: `b${i}`, queued: b.queued, running: 0, priority: b.priority }))
          const target = { accountId: `a${account}`, batchId: "target", queued, running: 0, priority }
          const accounts = new Set(queue.map((b) => b.accountId)).size
          expect(Math.abs(rowsAhead(queue, target) - simulatedByPriority(queue, target))).toBeLessThanOrEqual(accounts * (1 + HIGH_STARTS))
        },
      ),
    )
  })

  it("matches what the FairQueue starts first, within one row per account the cursor may favour", () => {
    fc.assert(
      fc.property(queueArb, fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 20 }), (queue, account, queued) => {
        const target = { accountId: `a${account}`, batchId: "target", queued, running: 0 }
        const accounts = new Set(queue.map((b) => b.accountId)).size
        expect(Math.abs(rowsAhead(queue, target) - simulated(queue, target))).toBeLessThanOrEqual(accounts)
      }),
    )
  })
  it("counts nothing ahead of a batch with no rows queued, and never more than the others have queued", () => {
    fc.assert(
      fc.property(queueArb, fc.integer({ min: 0, max: 20 }), (queue, queued) => {
        const ahead = rowsAhead(queue, { accountId: "a0", batchId: "target", queued })
        if (queued === 0) expect(ahead).toBe(0)
        expect(ahead).toBeLessThanOrEqual(queue.reduce((n, b) => n + b.queued, 0))
      }),
    )
  })
  it("finishes when the rows running, ahead and its own have passed at the measured rate; unknown without one", () => {
    expect(finishesAt(1_000, 0.01, { runningOnModel: 2, ahead: 3, queued: 5, running: 0 })).toBe(1_000 + 10 / 0.01)
    expect(finishesAt(1_000, 0.01, { runningOnModel: 2, ahead: 0, queued: 0, running: 1 })).toBe(1_000 + 2 / 0.01)
    expect(finishesAt(1_000, undefined, { runningOnModel: 2, ahead: 3, queued: 5, running: 0 })).toBeUndefined()
    expect(finishesAt(1_000, undefined, { runningOnModel: 0, ahead: 0, queued: 0, running: 0 })).toBe(1_000)
  })
})
