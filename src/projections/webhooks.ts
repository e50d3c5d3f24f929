import type Database from "better-sqlite3"
import { deliveryId, type WebhookEvent, webhookEventOf } from "../domain/webhook/events.js"

export const webhookTables = `
CREATE TABLE IF NOT EXISTS webhooks (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  secret TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  deleted_at INTEGER
);
CREATE INDEX IF NOT EXISTS webhooks_by_account ON webhooks (account_id);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id TEXT PRIMARY KEY,
  webhook_id TEXT NOT NULL,
  batch_id TEXT NOT NULL,
  event TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_at INTEGER,
  last_at INTEGER,
  last_status INTEGER,
  last_error TEXT
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, created_at);
`

/**
 * Webhook endpoints and their deliveries. A batch's final event makes one pending delivery per
 * endpoint of its account that asked for it, here, from the log: so every instance knows the
 * deliveries owed, a restart forgets none, and a rebuild from the log finds the same ones.
 */
export const webhooksProjection = (db: Database.Database) => {
  const s = {
    created: db.prepare(`INSERT OR IGNORE INTO webhooks (id, account_id, url, events, secret, created_at) VALUES (?, ?, ?, ?, ?, ?)`),
    deleted: db.prepare(`UPDATE webhooks SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL`),
    dropPending: db.prepare(`UPDATE webhook_deliveries SET status = 'failed', next_at = NULL, last_error = 'the webhook was deleted' WHERE webhook_id = ? AND status = 'pending'`),
    attempted: db.prepare(
      `UPDATE webhook_deliveries SET attempts = @attempt, last_at = @at, last_status = @status, last_error = @error, next_at = @next_at,
         status = CASE WHEN @ok THEN 'delivered' WHEN @next_at IS NULL THEN 'failed' ELSE 'pending' END
       WHERE id = @id AND attempts < @attempt AND status = 'pending'`,
    ),
    accountOf: db.prepare<[string], string>(`SELECT account_id FROM batches WHERE id = ?`).pluck(),
    subscribed: db.prepare<[string], { id: string; events: string }>(`SELECT id, events FROM webhooks WHERE account_id = ? AND deleted_at IS NULL`),
    owe: db.prepare(
      `INSERT OR IGNORE INTO webhook_deliveries (id, webhook_id, batch_id, event, created_at, status, next_at) VALUES (?, ?, ?, ?, ?, 'pending', ?)`,
    ),
  }
  const apply = (event: WebhookEvent) => {
    switch (event.type) {
      case "webhook_created":
        s.created.run(event.webhook_id, event.account_id, event.url, JSON.stringify(event.events), event.secret, event.at)
        return
      case "webhook_deleted":
        s.deleted.run(event.at, event.webhook_id)
        s.dropPending.run(event.webhook_id)
        return
      case "webhook_delivery_attempted":
        s.attempted.run({
          id: event.delivery_id,
          attempt: event.attempt,
          at: event.at,
          status: event.status,
          error: event.error,
          next_at: event.next_at,
          ok: event.ok ? 1 : 0,
        })
        return
    }
  }
  /** A batch lifecycle event: a final one owes its account's endpoints a delivery. Call before the batch row can be deleted. */
  const batchEvent = (event: { readonly type: string; readonly batch_id: string; readonly at?: number }) => {
    const name = webhookEventOf[event.type]
    if (name === undefined || event.at === undefined) return
    const accountId = s.accountOf.get(event.batch_id)
    if (accountId === undefined) return
    for (const hook of s.subscribed.all(accountId)) {
      if (!(JSON.parse(hook.events) as Array<string>).includes(name)) continue
      s.owe.run(deliveryId(hook.id, event.batch_id, name), hook.id, event.batch_id, name, event.at, event.at)
    }
  }
  return { apply, batchEvent }
}
