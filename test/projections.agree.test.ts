import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type BatchState, evolve, idleRows, initialState, isFinal } from "../src/domain/batch/state.js"
import { batchSubject } from "../src/domain/batch/subjects.js"
import type { LogMessage } from "../src/eventlog/EventLog.js"
import type { BatchChange } from "../src/projections/batches.js"
import { makeApplier } from "../src/projections/Projector.js"
import { batchId, createdAt } from "./domain/arbitraries/batchCommands.js"
import { messyLog, messyScenario, withReadModel } from "./support/messyBatchLog.js"

/*
 * Every reader of the log must make the same batch of it: the decider's state (evolve) and the SQL
 * projections the API reads, whoever wrote the events and from whatever view. Random logs (the
 * decider's own, with stale, repeated and foreign-view events slipped in) are applied to a real
 * SQLite read model in windows of random sizes, and compared with evolve after every window.
 */

const encoder = new TextEncoder()

const resultStatus = (state: BatchState, row: number): string => {
  const phase = state.rows.get(row)
  if (phase !== undefined) return phase.status
  if (state.closedAs === undefined) return "queued"
  return state.closedAs
}

describe("readers agree", () => {
  it("the projections and the decider's state make the same batch of any log: status, counts, cost, how it closed, and every row's status and attempt", () => {
    fc.assert(
      fc.property(messyScenario, ([s, extra, windows]) =>
        withReadModel((db) => {
          const apply = makeApplier(db)
          const events = messyLog(s.total, [...s.steps], extra)
          const messages: Array<LogMessage> = events.map((event, i) => ({
            seq: i + 1,
            subject: batchSubject(batchId, event.type),
            data: encoder.encode(JSON.stringify(event)),
            time: createdAt,
          }))
          let state = initialState(batchId)
          let next = 0
          for (let w = 0; next < messages.length; w++) {
            const size = windows[w % windows.length]!
            const window = messages.slice(next, next + size)
            expect(apply(window)).toEqual([])
            for (const event of events.slice(next, next + size)) state = evolve(state, event)
            next += size
            const batch = db
              .prepare(`SELECT status, total, completed, failed, cancelled, running, cost_usd, closing, final_written FROM batches WHERE id = ?`)
              .get(batchId) as Record<string, unknown> | undefined
            if (!state.exists || state.deleted) {
              expect(batch).toBeUndefined()
              continue
            }
            if (batch === undefined) return expect.fail("the batch is missing from the read model")
            expect({ ...batch, cost_usd: Math.round((batch.cost_usd as number) * 1e6) }).toEqual({
              status: state.status,
              total: state.total,
              completed: state.completed,
              failed: state.failed,
              cancelled: state.cancelled,
              running: state.running,
              cost_usd: Math.round(state.costUsd * 1e6),
              closing: state.closedAs ?? null,
              final_written: state.finalWritten ?? null,
            })
            const rows = db.prepare(`SELECT idx, status, attempts FROM results WHERE batch_id = ? ORDER BY idx`).all(batchId) as Array<{
              idx: number
              status: string
              attempts: number
            }>
            expect(rows.map((r) => [r.idx, r.status, r.attempts])).toEqual(
              rows.map((r) => [r.idx, resultStatus(state, r.idx), state.rows.get(r.idx)?.attempt ?? 0]),
            )
          }
        }),
      ),
      { numRuns: 150 },
    )
  })

  // The instances' model actors write a batch's final event when told it waits for one; a batch left
  // waiting untold, as by a closing decided on a view where its last row still ran, never finishes.
  it("a batch left with every row settled and no final event is announced as settled in the window that left it so", () => {
    const waitsForFinal = (state: BatchState) =>
      state.exists && !state.deleted && !isFinal(state.status) && state.running === 0 && idleRows(state) === 0
    fc.assert(
      fc.property(messyScenario, ([s, extra, windows]) =>
        withReadModel((db) => {
          const changes: Array<BatchChange> = []
          const apply = makeApplier(db, undefined, undefined, undefined, (change) => changes.push(change))
          const events = messyLog(s.total, [...s.steps], extra)
          let state = initialState(batchId)
          let next = 0
          for (let w = 0; next < events.length; w++) {
            const size = windows[w % windows.length]!
            const window = events.slice(next, next + size)
            changes.length = 0
            apply(window.map((event, i) => ({ seq: next + i + 1, subject: batchSubject(batchId, event.type), data: encoder.encode(JSON.stringify(event)), time: createdAt })))
            const before = state
            for (const event of window) state = evolve(state, event)
            next += size
            if (waitsForFinal(state) && !waitsForFinal(before)) expect(changes).toContainEqual({ kind: "settled", batchId })
          }
        }),
      ),
      { numRuns: 300 },
    )
  })
})
