import type Database from "better-sqlite3"
import type { WebhookEventName } from "../domain/webhook/events.js"

/** A webhook endpoint as the read model holds it: `events` is a JSON array, `created_at` Unix ms. */
export interface WebhookRow {
  readonly id: string
  readonly account_id: string
  readonly url: string
  readonly events: string
  readonly created_at: number
}

/** One delivery owed to an endpoint, and how its attempts went. Times are Unix ms. */
export interface DeliveryRow {
  readonly id: string
  readonly batch_id: string
  readonly event: WebhookEventName
  readonly status: "pending" | "delivered" | "failed"
  readonly attempts: number
  readonly created_at: number
  readonly last_at: number | null
  readonly last_status: number | null
  readonly last_error: string | null
  readonly next_at: number | null
}

/** A pending delivery whose next attempt is due, with its endpoint's address and secret. */
export interface DueDelivery {
  readonly id: string
  readonly webhook_id: string
  readonly batch_id: string
  readonly event: string
  readonly created_at: number
  readonly attempts: number
  readonly url: string
  readonly secret: string
}

export const webhookReads = (db: Database.Database) => {
  const s = {
    one: db.prepare<[string], WebhookRow>(`SELECT id, account_id, url, events, created_at FROM webhooks WHERE id = ? AND deleted_at IS NULL`),
    ofAccount: db.prepare<[string], WebhookRow>(
      `SELECT id, account_id, url, events, created_at FROM webhooks WHERE account_id = ? AND deleted_at IS NULL ORDER BY created_at`,
    ),
    deliveries: db.prepare<[string], DeliveryRow>(
      `SELECT id, batch_id, event, status, attempts, created_at, last_at, last_status, last_error, next_at
       FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at DESC, id LIMIT 100`,
    ),
    due: db.prepare<[number], DueDelivery>(
      `SELECT d.id, d.webhook_id, d.batch_id, d.event, d.created_at, d.attempts, w.url, w.secret
       FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
       WHERE d.status = 'pending' AND d.next_at <= ? ORDER BY d.next_at LIMIT 100`,
    ),
  }
  return {
    /** An endpoint not deleted. */
    one: (id: string) => s.one.get(id),
    ofAccount: (accountId: string) => s.ofAccount.all(accountId),
    /** The endpoint's latest 100 deliveries, newest first. */
    deliveries: (webhookId: string) => s.deliveries.all(webhookId),
    /** Up to 100 pending deliveries due by `now` (Unix ms), the longest due first. */
    due: (now: number) => s.due.all(now),
  }
}
export type WebhookReads = ReturnType<typeof webhookReads>
