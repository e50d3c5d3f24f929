import type Database from "better-sqlite3"
import type { FileEvent } from "../domain/file/events.js"

export const fileTables = `
CREATE TABLE IF NOT EXISTS files (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  filename TEXT NOT NULL,
  purpose TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  lines INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  first_seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  parts INTEGER NOT NULL,
  status TEXT NOT NULL,
  deleted_at INTEGER,
  reason TEXT
);
CREATE INDEX IF NOT EXISTS files_by_account ON files (account_id, seq);
CREATE TABLE IF NOT EXISTS file_tombstones (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  deleted_at INTEGER NOT NULL,
  purged_at INTEGER NOT NULL,
  reason TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS file_uploads (
  id TEXT PRIMARY KEY,
  first_seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  last_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS file_uploads_by_time ON file_uploads (last_at);
`

/**
 * How long the read model remembers the parts of an upload no `file_created` named, by the log's time of
 * the messages applied after them: long past the point where the retention sweep purges them (an hour).
 */
export const FORGET_UPLOADS_AFTER_MS = 24 * 3_600_000

/**
 * Files as their events leave them: a deleted one stays, marked, until its purge leaves its tombstone.
 * Parts of uploads no `file_created` names yet are remembered in `file_uploads`: an upload under way, or
 * one a crash cut short, whose parts the retention sweep purges.
 */
export const filesProjection = (db: Database.Database) => {
  const s = {
    created: db.prepare(
      `INSERT OR IGNORE INTO files (id, account_id, key_id, seq, filename, purpose, bytes, lines, created_at, expires_at, first_seq, last_seq, parts, status)
       SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'processed' WHERE NOT EXISTS (SELECT 1 FROM file_tombstones WHERE id = ?)`,
    ),
    deleted: db.prepare(`UPDATE files SET status = 'deleted', deleted_at = ?, reason = ? WHERE id = ? AND status = 'processed'`),
    purged: db.prepare(`DELETE FROM files WHERE id = ?`),
    tombstone: db.prepare(
      `INSERT OR IGNORE INTO file_tombstones (id, account_id, created_at, deleted_at, purged_at, reason) VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    part: db.prepare(
      `INSERT INTO file_uploads (id, first_seq, last_seq, last_at)
       SELECT @id, @seq, @seq, @at WHERE NOT EXISTS (SELECT 1 FROM files WHERE id = @id) AND NOT EXISTS (SELECT 1 FROM file_tombstones WHERE id = @id)
       ON CONFLICT (id) DO UPDATE SET last_seq = excluded.last_seq, last_at = excluded.last_at`,
    ),
    named: db.prepare(`DELETE FROM file_uploads WHERE id = ?`),
    forget: db.prepare(`DELETE FROM file_uploads WHERE last_at < ?`),
  }
  return {
    apply: (event: FileEvent, seq: number) => {
      switch (event.type) {
        case "file_created": {
          const c = event.content
          s.created.run(event.file_id, event.account_id, event.key_id, seq, event.filename, event.purpose, event.bytes, event.lines,
            event.created_at, event.expires_at, c.first_seq, c.last_seq, c.parts, event.file_id)
          s.named.run(event.file_id)
          return
        }
        case "file_deleted":
          s.deleted.run(event.at, event.reason, event.file_id)
          return
        case "file_purged":
          s.purged.run(event.file_id)
          s.named.run(event.file_id)
          s.tombstone.run(event.file_id, event.account_id, event.created_at, event.deleted_at, event.at, event.reason)
          return
      }
    },
    /** A part of an upload, at its place in the log and the log's time. */
    part: (fileId: string, seq: number, time: number) => void s.part.run({ id: fileId, seq, at: time }),
    /** The log has moved past `time`: uploads silent since long before it are forgotten. */
    movedTo: (time: number) => void s.forget.run(time - FORGET_UPLOADS_AFTER_MS),
  }
}
