import type Database from "better-sqlite3"
import type { Priority } from "../domain/scheduling/priority.js"

export interface AccountRow {
  readonly id: string
  readonly tier: "internal" | "standard"
  readonly status: "active" | "suspended" | "deleted"
  readonly daily_quota_usd: number | null
  readonly concurrency: number | null
  /** A JSON array of model ids, or null for every model. */
  readonly models: string | null
  /** Null for `standard`: every account stored before priorities existed. */
  readonly max_priority: Priority | null
}

export interface KeyRow {
  readonly id: string
  readonly account_id: string
  readonly expires_at: number | null
  readonly revoked_at: number | null
}

/** Accounts and their API keys as the accounts projection holds them. */
export const accountReads = (db: Database.Database) => {
  const s = {
    account: db.prepare<[string], AccountRow>(`SELECT id, tier, status, daily_quota_usd, concurrency, models, max_priority FROM accounts WHERE id = ?`),
    keyBySha: db.prepare<[string], KeyRow>(`SELECT id, account_id, expires_at, revoked_at FROM api_keys WHERE key_sha256 = ?`),
    keyById: db.prepare<[string], KeyRow>(`SELECT id, account_id, expires_at, revoked_at FROM api_keys WHERE id = ?`),
  }
  return {
    account: (id: string) => s.account.get(id),
    /** The key whose secret hashes to `sha256`. */
    keyBySecret: (sha256: string) => s.keyBySha.get(sha256),
    key: (id: string) => s.keyById.get(id),
  }
}
export type AccountReads = ReturnType<typeof accountReads>
