import type { ResultReads } from "../projections/resultReads.js"

const READ_AHEAD_ROWS = 64
const READ_AHEAD_CHARS = 1024 * 1024
const MAX_CACHED_CHARS = 16 * 1024 * 1024

/**
 * Request bodies for one model's rows. A batch's rows are mostly taken in order, so a miss reads the
 * next queued rows' bodies with it: one range read instead of a lookup per row. What is read ahead
 * is bounded, and forgotten when the batch is dropped or the bound is reached.
 */
export const makeBodyCache = (results: ResultReads, model: string) => {
  const byBatch = new Map<string, Map<number, string>>()
  let cachedChars = 0
  const clear = () => {
    byBatch.clear()
    cachedChars = 0
  }
  const take = (batchId: string, row: number): string | undefined => {
    const cached = byBatch.get(batchId)
    const hit = cached?.get(row)
    if (hit !== undefined) {
      cached!.delete(row)
      cachedChars -= hit.length
      return hit
    }
    const read = results.queuedBodies(batchId, model, row, READ_AHEAD_ROWS, READ_AHEAD_CHARS)
    const first = read[0]
    // Not queued in the read model (a retry whose requeue it has not applied yet): read it alone.
    if (first?.idx !== row) return results.body(batchId, row)
    if (cachedChars > MAX_CACHED_CHARS) clear()
    let ahead = byBatch.get(batchId)
    if (ahead === undefined) byBatch.set(batchId, (ahead = new Map()))
    for (let i = 1; i < read.length; i++) {
      const { idx, body } = read[i]!
      if (!ahead.has(idx)) {
        ahead.set(idx, body)
        cachedChars += body.length
      }
    }
    return first.body
  }
  const drop = (batchId: string) => {
    const cached = byBatch.get(batchId)
    if (cached === undefined) return
    for (const body of cached.values()) cachedChars -= body.length
    byBatch.delete(batchId)
  }
  return { take, drop }
}
