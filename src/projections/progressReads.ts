import type Database from "better-sqlite3"
import type { BatchProgress } from "../domain/api/BatchProgress.js"
import { bucketWidthMs, finalRowsPerSecond, timeline } from "../domain/batch/progress.js"

interface Times {
  readonly started_ms: number | null
  readonly ended_ms: number | null
}

/** A batch's settled rows over time: one grouped read of its own results, by the primary key's batch prefix. */
export const progressReads = (db: Database.Database) => {
  const s = {
    times: db.prepare<[string], Times>(`SELECT started_ms, ended_ms FROM batches WHERE id = ?`),
    buckets: db.prepare<{ id: string; from: number; width: number }, { bucket: number; rows: number }>(
      `SELECT CAST((settled_ms - @from) / @width AS INTEGER) AS bucket, count(*) AS rows
       FROM results WHERE batch_id = @id AND settled_ms IS NOT NULL GROUP BY bucket`,
    ),
  }
  /** Undefined for a batch the read model does not hold; `now` (Unix ms, the actors' clock) ends a running batch's timeline. */
  const of = (batchId: string, now: number): BatchProgress | undefined => {
    const times = s.times.get(batchId)
    if (times === undefined) return undefined
    const { started_ms: started, ended_ms: ended } = times
    if (started === null) {
      return { id: batchId, object: "batch.progress", started_at_ms: null, ended_at_ms: ended, rows_settled: 0, rows_per_second: null, bucket_ms: 1000, settled: [] }
    }
    const span = Math.max(1, (ended ?? now) - started)
    const width = bucketWidthMs(span)
    const counts = s.buckets.all({ id: batchId, from: started, width })
    const rows = counts.reduce((sum, c) => sum + c.rows, 0)
    return {
      id: batchId,
      object: "batch.progress",
      started_at_ms: started,
      ended_at_ms: ended,
      rows_settled: rows,
      rows_per_second: ended === null ? null : finalRowsPerSecond(rows, started, ended),
      bucket_ms: width,
      settled: timeline(counts, Math.ceil(span / width)),
    }
  }
  return { of }
}
