import type Database from "better-sqlite3"
import type { BatchEvent } from "../domain/batch/events.js"

export const responseTables = `
CREATE TABLE IF NOT EXISTS responses (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  model TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  background INTEGER NOT NULL,
  service_tier TEXT NOT NULL,
  stream_id TEXT,
  custom_id TEXT,
  metadata TEXT,
  echo TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_by_account ON responses (account_id, seq);
CREATE INDEX IF NOT EXISTS responses_by_stream ON responses (stream_id, seq) WHERE stream_id IS NOT NULL;
`

/**
 * What a response adds to the one-row batch it runs as (src/domain/response/queuedResponse.ts): its
 * status, counts and result are the batch's and its row's, in the batches and results tables.
 */
export const responsesProjection = (db: Database.Database) => {
  const s = {
    created: db.prepare(
      `INSERT OR IGNORE INTO responses (id, account_id, seq, model, endpoint, background, service_tier, stream_id, custom_id, metadata, echo)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    deleted: db.prepare(`DELETE FROM responses WHERE id = ?`),
  }
  return (event: BatchEvent, seq: number) => {
    if (event.type === "batch_created" && event.response !== undefined) {
      const r = event.response
      s.created.run(
        event.batch_id,
        event.account_id,
        seq,
        event.models[0] ?? "",
        r.endpoint,
        r.background ? 1 : 0,
        r.service_tier,
        r.stream_id,
        r.custom_id,
        event.metadata === null ? null : JSON.stringify(event.metadata),
        JSON.stringify(r.echo),
      )
    } else if (event.type === "batch_deleted" || event.type === "batch_purged") {
      s.deleted.run(event.batch_id)
    }
  }
}
