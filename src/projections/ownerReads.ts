import type Database from "better-sqlite3"
import { Context, Effect, Layer } from "effect"
import type { OwnerKey } from "../domain/account/ownerVerdict.js"
import { ReadModel } from "./ReadModel.js"
import { usedUsd } from "./usageReads.js"

/** An unfinished batch that still starts rows, and the key it was created with. */
export interface OpenBatch {
  readonly id: string
  readonly key_id: string
}

/** What admission reads about a batch row's owner: the batch's key, the key's standing, the account's open batches and usage. */
export interface OwnerReadsShape {
  /** The key a batch was created with; undefined when the batch is not in the read model (deleted or not yet applied). */
  readonly batchKey: (batchId: string) => string | undefined
  readonly key: (keyId: string) => OwnerKey | undefined
  readonly openBatches: (accountId: string) => ReadonlyArray<OpenBatch>
  /** What the account has spent on the UTC day `day`. */
  readonly usedUsd: (accountId: string, day: number) => number
}

export const ownerReads = (db: Database.Database): OwnerReadsShape => {
  const s = {
    batchKey: db.prepare<[string], { key_id: string }>(`SELECT key_id FROM batches WHERE id = ?`),
    key: db.prepare<[string], { revoked_at: number | null; expires_at: number | null }>(
      `SELECT revoked_at, expires_at FROM api_keys WHERE id = ?`,
    ),
    open: db.prepare<[string], OpenBatch>(
      `SELECT id, key_id FROM batches WHERE account_id = ? AND status IN ('validating', 'in_progress') AND closing IS NULL`,
    ),
  }
  return {
    batchKey: (batchId) => s.batchKey.get(batchId)?.key_id,
    key: (keyId) => {
      const row = s.key.get(keyId)
      return row === undefined ? undefined : { revoked: row.revoked_at !== null, expires_at: row.expires_at }
    },
    openBatches: (accountId) => s.open.all(accountId),
    usedUsd: (accountId, day) => usedUsd(db, accountId, day),
  }
}

export class OwnerReads extends Context.Tag("Projections/OwnerReads")<OwnerReads, OwnerReadsShape>() {
  static readonly layer = Layer.effect(OwnerReads, Effect.map(ReadModel, ownerReads))
}
