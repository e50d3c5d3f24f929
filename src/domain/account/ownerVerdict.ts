import { Data, Either } from "effect"
import { nextUtcMidnight } from "./utcDay.js"

export interface OwnerAccount {
  readonly tier: "internal" | "standard"
  readonly status: "active" | "suspended" | "deleted"
  readonly daily_quota_usd: number | null
  readonly concurrency: number | null
}

export interface OwnerKey {
  readonly revoked: boolean
  /** Unix seconds, as the API shows it. */
  readonly expires_at: number | null
}

/** What a batch row's owner looks like at the moment the row would start. */
export interface Owner {
  /** Undefined when the account is gone from the read model. */
  readonly account: OwnerAccount | undefined
  /** The key the batch was created with; undefined when it is gone. */
  readonly key: OwnerKey | undefined
  /** The account's usage on the current UTC day. */
  readonly usedTodayUsd: number
  /** The account's concurrent-request slots in use: its running batch rows and interactive requests. */
  readonly slotsInUse: number
}

export type OwnerError = { readonly code: "owner_unauthorized"; readonly message: string }

export type Verdict = Data.TaggedEnum<{
  Run: {}
  /** The key or account is no longer valid: the whole batch fails. */
  FailBatch: { readonly error: OwnerError }
  /** The daily quota is used up: nothing starts until it renews at `until` (00:00 UTC). */
  Pause: { readonly until: number }
  /** The account lost batch access: nothing starts until it has it again. */
  Wait: {}
  /** Every concurrent-request slot of the account is in use. */
  Full: {}
}>

export const Verdict = Data.taggedEnum<Verdict>()

const run = Verdict.Run()
const wait = Verdict.Wait()
const full = Verdict.Full()

export const keyExpired = (expiresAt: number | null, now: number): boolean => expiresAt !== null && expiresAt * 1000 <= now

export const quotaUsedUp = (quotaUsd: number | null, usedUsd: number): boolean => quotaUsd !== null && usedUsd >= quotaUsd

export const slotsFull = (concurrency: number | null, inUse: number): boolean => concurrency !== null && inUse >= concurrency

/** The account while the batch's key and account are valid, or why its owner may no longer run it. */
export const authorizedAccount = (
  account: OwnerAccount | undefined,
  key: OwnerKey | undefined,
  now: number,
): Either.Either<OwnerAccount, OwnerError> => {
  const because = (message: string) => Either.left<OwnerError>({ code: "owner_unauthorized", message })
  if (key === undefined) return because("The API key that created this batch no longer exists")
  if (key.revoked) return because("The API key that created this batch has been revoked")
  if (keyExpired(key.expires_at, now)) return because("The API key that created this batch has expired")
  if (account === undefined || account.status === "deleted") return because("The account that created this batch has been deleted")
  if (account.status === "suspended") return because("The account that created this batch has been suspended")
  return Either.right(account)
}

/**
 * Whether a batch row may start at `now`. An invalid owner outranks everything (the batch fails
 * whatever else holds), a used-up quota outranks lost access (it says when rows resume), and a
 * full account is checked last because it clears on its own as rows finish.
 */
export const verdict = (owner: Owner, now: number): Verdict => {
  const authorized = authorizedAccount(owner.account, owner.key, now)
  if (Either.isLeft(authorized)) return Verdict.FailBatch({ error: authorized.left })
  const account = authorized.right
  if (quotaUsedUp(account.daily_quota_usd, owner.usedTodayUsd)) return Verdict.Pause({ until: nextUtcMidnight(now) })
  if (account.tier !== "internal") return wait
  if (slotsFull(account.concurrency, owner.slotsInUse)) return full
  return run
}

const usd = (amount: number) => `$${amount.toFixed(2)}`

/** The 429 message of every call made while the daily quota is used up. */
export const quotaUsedUpMessage = (quotaUsd: number, usedUsd: number, until: number): string =>
  `You have used up your daily quota (${usd(usedUsd)} of ${usd(quotaUsd)} today); ` +
  `it renews at 00:00 UTC (${new Date(until).toISOString()}). Until then every call made with this key answers 429, ` +
  `and your batches are paused.`
