import { Schema } from "effect"

/*
 * Idempotency records are a storage format like the batch events: add, never rename. They live on
 * their own subject per (account, key), so a create's retry finds its first attempt in the log from
 * any instance and after any restart. Times are Unix milliseconds.
 */

/** A create took the key: its batch is `batch_id`, stored next (or never, if the create failed). */
export const IdempotencyKeyClaimed = Schema.Struct({
  type: Schema.Literal("idempotency_key_claimed"),
  account_id: Schema.String,
  body_sha256: Schema.String,
  batch_id: Schema.String,
  at: Schema.Number,
})

/** The create that claimed the key stored nothing: the key is free again. */
export const IdempotencyKeyReleased = Schema.Struct({
  type: Schema.Literal("idempotency_key_released"),
  account_id: Schema.String,
  batch_id: Schema.String,
  at: Schema.Number,
})

export const IdempotencyEvent = Schema.Union(IdempotencyKeyClaimed, IdempotencyKeyReleased)
export type IdempotencyEvent = typeof IdempotencyEvent.Type
