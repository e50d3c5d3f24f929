import type Database from "better-sqlite3"

const statements = new WeakMap<Database.Database, Database.Statement>()

/** What the account has spent on the given UTC day (see `utcDay`). */
export const usedUsd = (db: Database.Database, accountId: string, day: number): number => {
  let statement = statements.get(db)
  if (statement === undefined) {
    statement = db.prepare(`SELECT usd FROM usage WHERE account_id = ? AND day = ?`)
    statements.set(db, statement)
  }
  const row = statement.get(accountId, day) as { usd: number } | undefined
  return row?.usd ?? 0
}
