import type Database from "better-sqlite3"
import type { AccountEvent } from "../domain/account/events.js"

/** Accounts and their API keys (hashes only), as every instance sees them from the log. */
export const accountsProjection = (db: Database.Database) => {
  const s = {
    created: db.prepare(
      `INSERT OR IGNORE INTO accounts (id, tier, status, daily_quota_usd, concurrency, models, created_at, max_priority)
       VALUES (?, ?, 'active', ?, ?, ?, ?, ?)`,
    ),
    get: db.prepare(`SELECT tier, status, daily_quota_usd, concurrency, models, max_priority FROM accounts WHERE id = ?`),
    update: db.prepare(
      `UPDATE accounts SET tier = ?, status = ?, daily_quota_usd = ?, concurrency = ?, models = ?, max_priority = ? WHERE id = ?`,
    ),
    key: db.prepare(
      `INSERT OR IGNORE INTO api_keys (id, account_id, key_sha256, expires_at, created_at) VALUES (?, ?, ?, ?, ?)`,
    ),
    revoke: db.prepare(`UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`),
  }
  const models = (m: ReadonlyArray<string> | null) => (m === null ? null : JSON.stringify(m))
  return (event: AccountEvent): void => {
    switch (event.type) {
      case "account_created":
        s.created.run(event.account_id, event.tier, event.daily_quota_usd, event.concurrency, models(event.models), event.at, event.max_priority ?? null)
        return
      case "account_updated": {
        const row = s.get.get(event.account_id) as
          | { tier: string; status: string; daily_quota_usd: number | null; concurrency: number | null; models: string | null; max_priority: string | null }
          | undefined
        if (row === undefined) return
        s.update.run(
          event.tier ?? row.tier,
          event.status ?? row.status,
          event.daily_quota_usd === undefined ? row.daily_quota_usd : event.daily_quota_usd,
          event.concurrency === undefined ? row.concurrency : event.concurrency,
          event.models === undefined ? row.models : models(event.models),
          event.max_priority ?? row.max_priority,
          event.account_id,
        )
        return
      }
      case "key_created":
        s.key.run(event.key_id, event.account_id, event.key_sha256, event.expires_at, event.at)
        return
      case "key_revoked":
        s.revoke.run(event.at, event.key_id)
        return
    }
  }
}
