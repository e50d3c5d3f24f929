import type Database from "better-sqlite3"

/** How far back a model's rate looks, in the log's event time: long enough to smooth a round of answers. */
export const RATE_WINDOW_MS = 60_000
const KEPT = 512

interface Settles {
  readonly at: Array<number>
  next: number
}

/**
 * Each model's measured rate: rows settled per ms over the last minute of the settling events' own
 * times, as this instance's projections apply them from the log (so every instance measures every
 * model, whoever runs it). In memory: after a restart a model has a rate again once rows settle.
 */
export const makeThroughput = (db: Database.Database) => {
  const modelsOf = db.prepare<[string], string>(`SELECT models FROM batches WHERE id = ?`).pluck()
  const rowModel = db.prepare<[string, number], string>(`SELECT model FROM results WHERE batch_id = ? AND idx = ?`).pluck()
  const single = new Map<string, string | null>()
  const settles = new Map<string, Settles>()

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
    if (s === undefined) settles.set(model, (s = { at: [], next: 0 }))
    if (s.at.length < KEPT) s.at.push(at)
    else s.at[s.next] = at
    s.next = (s.next + 1) % KEPT
  }

  /** Rows settled per ms lately; undefined before two settles at different times. */
  const ratePerMs = (model: string): number | undefined => {
    const s = settles.get(model)
    if (s === undefined || s.at.length < 2) return undefined
    const latest = Math.max(...s.at)
    let first = latest
    let n = 0
    for (const at of s.at) {
      if (at < latest - RATE_WINDOW_MS) continue
      n++
      if (at < first) first = at
    }
    return n >= 2 && latest > first ? (n - 1) / (latest - first) : undefined
  }

  return { settled, ratePerMs }
}
export type Throughput = ReturnType<typeof makeThroughput>
