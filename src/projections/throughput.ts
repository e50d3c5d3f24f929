import type Database from "better-sqlite3"
import { RateMeter } from "../domain/scheduling/rate.js"

/**
 * Each model's measured rate: rows settled per ms over the last minute of the settling events' own
 * times, as this instance's projections apply them from the log (so every instance measures every
 * model, whoever runs it). In memory: after a restart a model has a rate again once rows settle.
 */
export const makeThroughput = (db: Database.Database) => {
  const modelsOf = db.prepare<[string], string>(`SELECT models FROM batches WHERE id = ?`).pluck()
  const rowModel = db.prepare<[string, number], string>(`SELECT model FROM results WHERE batch_id = ? AND idx = ?`).pluck()
  const single = new Map<string, string | null>()
  const settles = new Map<string, RateMeter>()

  const modelOf = (batchId: string, row: number): string | undefined => {
    let known = single.get(batchId)
    if (known === undefined) {
      const models = JSON.parse(modelsOf.get(batchId) ?? "[]") as Array<string>
      known = models.length === 1 ? models[0]! : null
      if (single.size > 10_000) single.clear()
      single.set(batchId, known)
    }
    return known ?? rowModel.get(batchId, row)
  }

  /** A row of the batch settled (completed, failed or cancelled while running) at `at`. */
  const settled = (batchId: string, row: number, at: number) => {
    const model = modelOf(batchId, row)
    if (model === undefined) return
    let s = settles.get(model)
    if (s === undefined) settles.set(model, (s = new RateMeter()))
    s.record(at)
  }

  /** Rows settled per ms lately; undefined before two settles at different times. */
  const ratePerMs = (model: string): number | undefined => settles.get(model)?.perMs()

  return { settled, ratePerMs }
}
export type Throughput = ReturnType<typeof makeThroughput>
