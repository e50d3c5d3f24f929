import type Database from "better-sqlite3"
import type { StreamEvent } from "../domain/stream/events.js"

export const streamTables = `
CREATE TABLE IF NOT EXISTS streams (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  name TEXT NOT NULL,
  window TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  cancelled_at INTEGER,
  archived_at INTEGER,
  priority TEXT
);
CREATE INDEX IF NOT EXISTS streams_by_account ON streams (account_id, seq);
CREATE TABLE IF NOT EXISTS stream_tombstones (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  archived_at INTEGER NOT NULL,
  purged_at INTEGER NOT NULL
);
`

/** Streams as their events leave them; an archived one changes no more, and nothing reopens. A purged one leaves its tombstone. */
export const streamsProjection = (db: Database.Database) => {
  const s = {
    created: db.prepare(
      `INSERT OR IGNORE INTO streams (id, account_id, key_id, seq, name, window, status, created_at, updated_at, priority)
       VALUES (?, ?, ?, ?, ?, ?, 'open', ?, ?, ?)`,
    ),
    renamed: db.prepare(`UPDATE streams SET name = ?, updated_at = ? WHERE id = ? AND status <> 'archived'`),
    cancelled: db.prepare(`UPDATE streams SET status = 'cancelled', cancelled_at = ?, updated_at = ? WHERE id = ? AND status = 'open'`),
    archived: db.prepare(`UPDATE streams SET status = 'archived', archived_at = ?, updated_at = ? WHERE id = ? AND status <> 'archived'`),
    purged: db.prepare(`DELETE FROM streams WHERE id = ?`),
    tombstone: db.prepare(`INSERT OR IGNORE INTO stream_tombstones (id, account_id, created_at, archived_at, purged_at) VALUES (?, ?, ?, ?, ?)`),
  }
  return (event: StreamEvent, seq: number) => {
    switch (event.type) {
      case "stream_created":
        s.created.run(event.stream_id, event.account_id, event.key_id, seq, event.name, event.window, event.at, event.at, event.priority ?? null)
        return
      case "stream_renamed":
        s.renamed.run(event.name, event.at, event.stream_id)
        return
      case "stream_cancelled":
        s.cancelled.run(event.at, event.at, event.stream_id)
        return
      case "stream_archived":
        s.archived.run(event.at, event.at, event.stream_id)
        return
      case "stream_purged":
        s.purged.run(event.stream_id)
        s.tombstone.run(event.stream_id, event.account_id, event.created_at, event.archived_at, event.at)
        return
    }
  }
}
