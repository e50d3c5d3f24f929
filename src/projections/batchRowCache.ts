import type Database from "better-sqlite3"
import type { BatchRow } from "./batchReads.js"

/** Batches kept: the unfinished ones an instance holds (ten an account) and the recently read, with room to spare. */
const LIMIT = 10_000

/**
 * The batch rows readers asked for, by id, for one read model: a batch object, a results page and the
 * list each read them, and under 200 readers the rows' SELECT (45 columns made into an object) was a
 * tenth of the thread's time (B12s). The batches projection forgets a batch whenever it writes its row,
 * inside the transaction that writes it, so a reader that awaited a sequence reads what it committed.
 * A row is kept only when read outside a transaction (never one the projection has not committed) and
 * frozen, since every reader shares it.
 */
export interface BatchRowCache {
  readonly get: (id: string) => BatchRow | undefined
  readonly keep: (row: BatchRow) => BatchRow
  readonly forget: (id: string) => void
  readonly forgetAll: () => void
}

const caches = new WeakMap<Database.Database, BatchRowCache>()

export const batchRowCache = (db: Database.Database): BatchRowCache => {
  const known = caches.get(db)
  if (known !== undefined) return known
  const rows = new Map<string, BatchRow>()
  const cache: BatchRowCache = {
    get: (id) => rows.get(id),
    keep: (row) => {
      if (db.inTransaction) return row
      if (rows.size >= LIMIT) rows.delete(rows.keys().next().value!)
      const frozen = Object.freeze(row)
      rows.set(row.id, frozen)
      return frozen
    },
    forget: (id) => void rows.delete(id),
    forgetAll: () => rows.clear(),
  }
  caches.set(db, cache)
  return cache
}
