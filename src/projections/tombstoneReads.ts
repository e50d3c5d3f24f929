import type Database from "better-sqlite3"
import type { DeletionReason } from "../domain/batch/events.js"

/** What a deleted batch leaves: no request or result content. Times are Unix milliseconds. */
export interface Tombstone {
  readonly id: string
  readonly account_id: string
  readonly created_at: number
  readonly deleted_at: number
  readonly reason: DeletionReason
  /** Its history is purged from the log and its `batch_purged` event written. */
  readonly purged: number
}

export const tombstoneReads = (db: Database.Database) => {
  const s = {
    one: db.prepare<[string], Tombstone>(`SELECT * FROM tombstones WHERE id = ?`),
    unpurged: db.prepare<[], Tombstone>(`SELECT * FROM tombstones WHERE purged = 0`),
  }
  return {
    one: (id: string) => s.one.get(id),
    /** Another account's deleted batch reads exactly like one that never existed. */
    ofAccount: (accountId: string, id: string) => {
      const tombstone = s.one.get(id)
      return tombstone !== undefined && tombstone.account_id === accountId ? tombstone : undefined
    },
    /** Deletions whose purge a crash or an unavailable log interrupted. */
    unpurged: () => s.unpurged.all(),
  }
}
export type TombstoneReads = ReturnType<typeof tombstoneReads>
