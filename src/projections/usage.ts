import type Database from "better-sqlite3"
import type { UsageRecorded } from "../domain/account/events.js"
import type { BatchPurged, RowCompleted } from "../domain/batch/events.js"
import { utcDay, utcDayOfIso } from "../domain/account/utcDay.js"

/**
 * What each account has spent per UTC day: its batch rows' costs and its recorded interactive usage.
 * Answers the account charged, or undefined when nothing was.
 */
export const usageProjection = (db: Database.Database) => {
  const s = {
    owner: db.prepare(`SELECT account_id FROM batches WHERE id = ?`),
    tombstone: db.prepare(`SELECT 1 FROM tombstones WHERE id = ?`).pluck(),
    add: db.prepare(
      `INSERT INTO usage (account_id, day, usd) VALUES (?, ?, ?)
       ON CONFLICT (account_id, day) DO UPDATE SET usd = usd + excluded.usd`,
    ),
  }
  // A batch's account never changes; the cache is dropped with every window and every batch lifecycle event.
  const owners = new Map<string, string | undefined>()
  const owner = (batchId: string) => {
    if (owners.has(batchId)) return owners.get(batchId)
    const id = (s.owner.get(batchId) as { account_id: string } | undefined)?.account_id
    owners.set(batchId, id)
    return id
  }
  const charge = (accountId: string, at: number, usd: number) => {
    if (!(usd > 0)) return undefined
    s.add.run(accountId, utcDay(at), usd)
    return accountId
  }
  const apply = (event: typeof RowCompleted.Type | typeof UsageRecorded.Type): string | undefined => {
    switch (event.type) {
      case "row_completed": {
        // The row event names its batch only; the batch row, written earlier in the log, names the account.
        const accountId = owner(event.batch_id)
        return accountId === undefined ? undefined : charge(accountId, event.at, event.cost_usd)
      }
      case "usage_recorded":
        return charge(event.account_id, event.at, event.usd)
    }
  }
  /**
   * A purged batch's spending, counted only by a reader that never saw its rows: one whose log no
   * longer holds the batch's deletion (applied before the purge, it left a tombstone here). Call it
   * before the tombstone projection applies the purge.
   */
  const purged = (event: typeof BatchPurged.Type): string | undefined => {
    if (event.spent === undefined || s.tombstone.get(event.batch_id) !== undefined) return undefined
    let charged: string | undefined
    for (const [day, usd] of Object.entries(event.spent)) {
      const d = utcDayOfIso(day)
      if (d === undefined || !(usd > 0)) continue
      s.add.run(event.account_id, d, usd)
      charged = event.account_id
    }
    return charged
  }
  return { apply, purged, forget: () => owners.clear() }
}
