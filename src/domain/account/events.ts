import { Schema } from "effect"
import { Priority } from "../scheduling/priority.js"

/*
 * Account and key events are a storage format like the batch events: add, never
 * rename. Times are Unix milliseconds; `expires_at` is Unix seconds as the API shows it.
 */

export const Tier = Schema.Literal("internal", "standard")
export const AccountStatus = Schema.Literal("active", "suspended", "deleted")

const Settings = {
  tier: Tier,
  daily_quota_usd: Schema.NullOr(Schema.Number),
  concurrency: Schema.NullOr(Schema.Number),
  models: Schema.NullOr(Schema.Array(Schema.String)),
}

export const AccountCreated = Schema.Struct({
  type: Schema.Literal("account_created"),
  account_id: Schema.String,
  ...Settings,
  /** The highest priority its batches, responses and streams may ask for; absent for `standard`. */
  max_priority: Schema.optional(Priority),
  at: Schema.Number,
})

export const AccountUpdated = Schema.Struct({
  type: Schema.Literal("account_updated"),
  account_id: Schema.String,
  tier: Schema.optional(Tier),
  daily_quota_usd: Schema.optional(Schema.NullOr(Schema.Number)),
  concurrency: Schema.optional(Schema.NullOr(Schema.Number)),
  models: Schema.optional(Schema.NullOr(Schema.Array(Schema.String))),
  status: Schema.optional(AccountStatus),
  max_priority: Schema.optional(Priority),
  at: Schema.Number,
})

/** Only the key's SHA-256 is stored: the secret is shown once, at creation. */
export const KeyCreated = Schema.Struct({
  type: Schema.Literal("key_created"),
  account_id: Schema.String,
  key_id: Schema.String,
  key_sha256: Schema.String,
  expires_at: Schema.NullOr(Schema.Number),
  at: Schema.Number,
})

export const KeyRevoked = Schema.Struct({
  type: Schema.Literal("key_revoked"),
  account_id: Schema.String,
  key_id: Schema.String,
  at: Schema.Number,
})

/**
 * Spending that counts toward the account's daily quota (the UTC day of `at`) but is not a batch
 * row's: an interactive request. A batch row's cost is already in its `row_completed` event.
 */
export const UsageRecorded = Schema.Struct({
  type: Schema.Literal("usage_recorded"),
  account_id: Schema.String,
  usd: Schema.Number,
  source: Schema.Literal("interactive"),
  at: Schema.Number,
})

export const AccountEvent = Schema.Union(AccountCreated, AccountUpdated, KeyCreated, KeyRevoked, UsageRecorded)
export type AccountEvent = typeof AccountEvent.Type

export const accountSubject = (accountId: string, type: AccountEvent["type"]) => `account.${accountId}.${type}`
export const everyAccountEvent = "account.>"
export const oneAccount = (accountId: string) => `account.${accountId}.>`
