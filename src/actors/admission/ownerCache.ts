import type { OwnerKey } from "../../domain/account/ownerVerdict.js"
import { utcDay } from "../../domain/account/utcDay.js"
import type { AccountChanges } from "../../projections/Projector.js"
import type { OwnerReadsShape } from "../../projections/ownerReads.js"
import type { Account } from "../Accounts.js"

interface CachedOwner {
  readonly account: Account | undefined
  usage: { readonly day: number; readonly usd: number } | undefined
  readonly keys: Map<string, OwnerKey | undefined>
}

const BATCH_KEYS_LIMIT = 100_000

/**
 * Accounts, keys, today's usage and batches' keys as the projections last showed them, read once and
 * kept until the projections report a change, so thousands of row checks a second read no SQL.
 */
export const makeOwnerCache = (
  reads: OwnerReadsShape,
  account: (accountId: string) => Account | undefined,
  /** Called once per key with an expiry, when it is first read: the batches it created fail then. */
  onExpiring: (accountId: string, keyId: string, atMs: number) => void,
) => {
  const owners = new Map<string, CachedOwner>()
  const batchKeys = new Map<string, string>()

  const owner = (accountId: string): CachedOwner => {
    let cached = owners.get(accountId)
    if (cached === undefined) {
      cached = { account: account(accountId), usage: undefined, keys: new Map() }
      owners.set(accountId, cached)
    }
    return cached
  }

  return {
    account: (accountId: string) => owner(accountId).account,
    key: (accountId: string, keyId: string): OwnerKey | undefined => {
      const cached = owner(accountId)
      if (cached.keys.has(keyId)) return cached.keys.get(keyId)
      const key = reads.key(keyId)
      cached.keys.set(keyId, key)
      if (key?.expires_at != null) onExpiring(accountId, keyId, key.expires_at * 1000)
      return key
    },
    /** Today's usage; 0 for an account without a daily quota, whose usage nothing checks. */
    usedToday: (accountId: string, now: number): number => {
      const cached = owner(accountId)
      if (cached.account?.daily_quota_usd == null) return 0
      const day = utcDay(now)
      if (cached.usage?.day !== day) cached.usage = { day, usd: reads.usedUsd(accountId, day) }
      return cached.usage.usd
    },
    batchKey: (batchId: string): string | undefined => {
      const known = batchKeys.get(batchId)
      if (known !== undefined) return known
      const keyId = reads.batchKey(batchId)
      if (keyId === undefined) return undefined
      if (batchKeys.size >= BATCH_KEYS_LIMIT) batchKeys.clear()
      batchKeys.set(batchId, keyId)
      return keyId
    },
    /** Forgets what the projections changed: a new usage is read again, new settings or keys reload the account. */
    invalidate: (changes: AccountChanges) => {
      for (const id of changes.usage) {
        const cached = owners.get(id)
        if (cached !== undefined) cached.usage = undefined
      }
      for (const id of changes.settings) owners.delete(id)
    },
  }
}

export type OwnerCache = ReturnType<typeof makeOwnerCache>
