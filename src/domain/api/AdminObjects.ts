import { Schema } from "effect"
import { Priority } from "../scheduling/priority.js"

/** The admin API's bodies and answers (`/admin/v1`): the server decodes with them, the SDK is typed by them. */
export const AccountSettingsPayload = Schema.Struct({
  tier: Schema.optional(Schema.Literal("internal", "standard")),
  daily_quota_usd: Schema.optional(Schema.NullOr(Schema.NonNegative)),
  concurrency: Schema.optional(Schema.NullOr(Schema.Int.pipe(Schema.positive()))),
  models: Schema.optional(Schema.NullOr(Schema.Array(Schema.String))),
  max_priority: Schema.optional(Priority).annotations({
    description: "The highest `priority` the account's batches, responses and streams may ask for (default standard); more answers 403",
  }),
})

export const CreateAccountPayload = Schema.Struct({
  id: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/)),
  ...AccountSettingsPayload.fields,
})

export const UpdateAccountPayload = Schema.Struct({
  ...AccountSettingsPayload.fields,
  status: Schema.optional(Schema.Literal("active", "suspended", "deleted")),
})

export const CreateKeyPayload = Schema.Struct({ expires_at: Schema.optional(Schema.NullOr(Schema.Int)) })

export const AccountObject = Schema.Struct({
  id: Schema.String,
  tier: Schema.Literal("internal", "standard"),
  status: Schema.Literal("active", "suspended", "deleted"),
  daily_quota_usd: Schema.NullOr(Schema.Number),
  concurrency: Schema.NullOr(Schema.Number),
  models: Schema.NullOr(Schema.Array(Schema.String)),
  max_priority: Priority,
})
export type AccountObject = typeof AccountObject.Type

/** The key's secret is in `key`, in this answer only. */
export const CreatedKey = Schema.Struct({ id: Schema.String, key: Schema.String, expires_at: Schema.NullOr(Schema.Number) })
export type CreatedKey = typeof CreatedKey.Type

export const RevokedKey = Schema.Struct({ id: Schema.String, revoked: Schema.Literal(true) })
export type RevokedKey = typeof RevokedKey.Type
