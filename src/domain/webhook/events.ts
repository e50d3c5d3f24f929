import { Schema } from "effect"

/*
 * Webhook events are a storage format like the batch events: add, never rename. An endpoint's events
 * share the subject prefix `webhook.<webhook_id>.`. Times are Unix milliseconds.
 */

/** OpenAI's names for the batch events a webhook may ask for. */
export const WebhookEventName = Schema.Literal("batch.completed", "batch.failed", "batch.expired", "batch.cancelled")
export type WebhookEventName = typeof WebhookEventName.Type

/**
 * The signing secret is kept here, in the log, so that every instance can sign: unlike an API key it
 * must be read back, not only compared.
 */
export const WebhookCreated = Schema.Struct({
  type: Schema.Literal("webhook_created"),
  webhook_id: Schema.String,
  account_id: Schema.String,
  url: Schema.String,
  events: Schema.Array(WebhookEventName),
  secret: Schema.String,
  at: Schema.Number,
})

export const WebhookDeleted = Schema.Struct({
  type: Schema.Literal("webhook_deleted"),
  webhook_id: Schema.String,
  account_id: Schema.String,
  at: Schema.Number,
})

/** One attempt to deliver one event to one endpoint: `next_at` is when the next comes, null when none will. */
export const WebhookDeliveryAttempted = Schema.Struct({
  type: Schema.Literal("webhook_delivery_attempted"),
  webhook_id: Schema.String,
  delivery_id: Schema.String,
  attempt: Schema.Number,
  at: Schema.Number,
  status: Schema.NullOr(Schema.Number),
  ok: Schema.Boolean,
  error: Schema.NullOr(Schema.String),
  next_at: Schema.NullOr(Schema.Number),
})

export const WebhookEvent = Schema.Union(WebhookCreated, WebhookDeleted, WebhookDeliveryAttempted)
export type WebhookEvent = typeof WebhookEvent.Type

/** The only place webhook subjects are built. */
export const webhookSubject = (webhookId: string, type: "webhook_created" | "webhook_deleted" | "delivery_attempted") =>
  `webhook.${webhookId}.${type}`
export const everyWebhookEvent = "webhook.>"

/** The batch's final event a webhook event name stands for. */
export const webhookEventOf: Readonly<Record<string, WebhookEventName>> = {
  batch_completed: "batch.completed",
  batch_failed: "batch.failed",
  batch_expired: "batch.expired",
  batch_cancelled: "batch.cancelled",
}

/** One delivery per endpoint and batch event: its id is the `webhook-id` every attempt carries. */
export const deliveryId = (webhookId: string, batchId: string, event: WebhookEventName) =>
  `msg_${webhookId.replace(/^wh_/, "")}_${batchId.replace(/^batch_/, "")}_${event.slice("batch.".length)}`
