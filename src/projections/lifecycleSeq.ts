import type Database from "better-sqlite3"

/**
 * The log sequence of the last event applied that was not a row's progress: a batch's lifecycle (created,
 * closing, final, deleted) or an account's settings. Readers that keep what they derived from the queue
 * and the accounts (an HTTP front's live facts) keep it only while this has not moved, so a command's
 * effect shows in the next read; row events, most of the log, leave it where it is.
 */
export const lifecycleSeqTable = `
CREATE TABLE IF NOT EXISTS lifecycle_seq (id INTEGER PRIMARY KEY CHECK (id = 0), seq INTEGER NOT NULL);
`

/** Written once a transaction, with the last such event the transaction applied. */
export const lifecycleSeqProjection = (db: Database.Database) => {
  const write = db.prepare(`INSERT INTO lifecycle_seq (id, seq) VALUES (0, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq`)
  let last = 0
  return {
    saw: (seq: number) => {
      last = seq
    },
    flush: () => {
      if (last > 0) write.run(last)
      last = 0
    },
  }
}

export const lifecycleSeqReads = (db: Database.Database) => {
  const read = db.prepare<[], number>(`SELECT seq FROM lifecycle_seq WHERE id = 0`).pluck()
  return (): number => read.get() ?? 0
}
