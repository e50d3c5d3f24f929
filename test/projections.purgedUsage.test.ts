import { describe, expect, it } from "vitest"
import type { BatchEvent } from "../src/domain/batch/events.js"
import { batchSubject } from "../src/domain/batch/subjects.js"
import type { LogMessage } from "../src/eventlog/EventLog.js"
import { makeApplier } from "../src/projections/Projector.js"
import { ReadModel } from "../src/projections/ReadModel.js"
import { batchCreated, batchId, createdAt } from "./domain/arbitraries/batchCommands.js"
import { withReadModel } from "./support/messyBatchLog.js"

/*
 * A deleted batch's spending still counts toward its account's day after its history is purged:
 * the read model that applied the rows keeps it, and a read model rebuilt from the purged log counts
 * it from the tombstone's `spent`, once.
 */
const encoder = new TextEncoder()
const DAY = 86_400_000

const messages = (payloads: ReadonlyArray<{ readonly subject: string; readonly payload: object }>): Array<LogMessage> =>
  payloads.map(({ subject, payload }, i) => ({ seq: i + 1, time: createdAt, subject, data: encoder.encode(JSON.stringify(payload)) }))
const event = (e: BatchEvent) => ({ subject: batchSubject(e.batch_id, e.type), payload: e })
const completed = (row: number, at: number, cost: number) => [
  { type: "row_started", batch_id: batchId, row, attempt: 1, at },
  { type: "row_completed", batch_id: batchId, row, attempt: 1, at, response: { status_code: 200, request_id: `req_${row}`, body: {} }, cost_usd: cost },
]
// Two rows on the day of creation, one the next day (the batch ran past midnight).
const nextDay = Math.floor(createdAt / DAY) * DAY + DAY + 5_000
const history = [
  { subject: `batch.${batchId}.rows_added`, payload: { type: "rows_added", batch_id: batchId, first: 0, rows: [0, 1, 2].map((i) => ({ custom_id: `r${i}`, model: "glm-5.3-flash", body: {} })) } },
  event(batchCreated(3)),
  event({ type: "batch_started", batch_id: batchId, at: createdAt + 1 } as BatchEvent),
  {
    subject: `batch.${batchId}.lane.glm`,
    payload: { type: "lane_window", batch_id: batchId, model: "glm-5.3-flash", owner: "i", lease: 1, events: [...completed(0, createdAt + 10, 0.25), ...completed(1, createdAt + 20, 0.5), ...completed(2, nextDay, 1)] },
  },
  event({ type: "batch_completed", batch_id: batchId, at: nextDay + 1 } as BatchEvent),
  event({ type: "batch_deleted", batch_id: batchId, at: nextDay + 2, reason: "deleted", v: 2 } as BatchEvent),
]
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10)
const purged = event({
  type: "batch_purged",
  batch_id: batchId,
  account_id: "acct_prop",
  created_at: createdAt,
  deleted_at: nextDay + 2,
  reason: "deleted",
  spent: { [iso(createdAt)]: 0.75, [iso(nextDay)]: 1 },
} as BatchEvent)

const usage = (db: ReadModel["Type"]) => db.prepare(`SELECT account_id, day, usd FROM usage ORDER BY day`).all()

describe("a purged batch's spending", () => {
  it("counts once: in the read model that applied its rows, and from the tombstone in one rebuilt from the purged log", () => {
    const live = withReadModel((db) => {
      makeApplier(db)(messages([...history, purged]))
      return usage(db)
    })
    expect(live).toEqual([
      { account_id: "acct_prop", day: Math.floor(createdAt / DAY), usd: 0.75 },
      { account_id: "acct_prop", day: Math.floor(nextDay / DAY), usd: 1 },
    ])
    const rebuilt = withReadModel((db) => {
      makeApplier(db)(messages([purged]))
      return usage(db)
    })
    expect(rebuilt).toEqual(live)
  })
})
