import type Database from "better-sqlite3"
import { DEFAULT_PRIORITY, type Priority } from "../domain/scheduling/priority.js"
import type { QueuedBatch } from "../domain/scheduling/turnsAhead.js"

export interface ModelQueue extends QueuedBatch {
  readonly model: string
}

/**
 * The rows of the batches that still start rows, per model: queued and running counts from the
 * batches' counters, read per row only for batches of several models.
 */
export const queueReads = (db: Database.Database) => {
  const s = {
    open: db.prepare(
      `SELECT id, account_id, models, priority, total - running - completed - failed - cancelled AS queued, running
       FROM batches WHERE status IN ('validating', 'in_progress') AND closing IS NULL`,
    ),
    perModel: db.prepare(
      `SELECT model, sum(status = 'queued') AS queued, sum(status = 'running') AS running
       FROM results WHERE batch_id = ? AND status IN ('queued', 'running') GROUP BY model`,
    ),
  }
  return {
    queues: (): Array<ModelQueue> => {
      const out: Array<ModelQueue> = []
      for (const b of s.open.all() as Array<{ id: string; account_id: string; models: string; priority: Priority | null; queued: number; running: number }>) {
        const models = JSON.parse(b.models) as Array<string>
        const priority = b.priority ?? DEFAULT_PRIORITY
        if (models.length === 1) {
          out.push({ model: models[0]!, accountId: b.account_id, batchId: b.id, priority, queued: b.queued, running: b.running })
          continue
        }
        for (const m of s.perModel.all(b.id) as Array<{ model: string; queued: number; running: number }>) {
          out.push({ model: m.model, accountId: b.account_id, batchId: b.id, priority, queued: m.queued, running: m.running })
        }
      }
      return out
    },
  }
}
