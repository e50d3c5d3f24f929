import Database from "better-sqlite3"
import { checkpointOn, walCheckpoints } from "../eventlog/walCheckpoints.js"
import { Context, Effect, Layer } from "effect"
import { webhookTables } from "./webhooks.js"
import { responseTables } from "./responses.js"
import { streamTables } from "./streams.js"
import { completionTables } from "./completions.js"
import { fileTables } from "./files.js"
import { lifecycleSeqTable } from "./lifecycleSeq.js"

const schema = `
CREATE TABLE IF NOT EXISTS offsets (name TEXT PRIMARY KEY, seq INTEGER NOT NULL, resume_seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS partial_window (id INTEGER PRIMARY KEY CHECK (id = 0), seq INTEGER NOT NULL, event INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS batches (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  status TEXT NOT NULL,
  completion_window TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  in_progress_at INTEGER, expires_at INTEGER NOT NULL, completed_at INTEGER, failed_at INTEGER,
  expired_at INTEGER, cancelling_at INTEGER, cancelled_at INTEGER,
  total INTEGER NOT NULL,
  completed INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  cancelled INTEGER NOT NULL DEFAULT 0,
  running INTEGER NOT NULL DEFAULT 0,
  cost_usd REAL NOT NULL DEFAULT 0,
  metadata TEXT,
  error TEXT,
  models TEXT NOT NULL,
  closing TEXT,
  closing_error TEXT,
  final_written TEXT,
  created_ms INTEGER NOT NULL,
  rerun_of TEXT,
  endpoint TEXT,
  input_file_id TEXT,
  priority TEXT,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  cached_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  reasoning_tokens INTEGER NOT NULL DEFAULT 0,
  total_tokens INTEGER NOT NULL DEFAULT 0,
  started_ms INTEGER,
  ended_ms INTEGER,
  retrying INTEGER NOT NULL DEFAULT 0,
  moved_ms INTEGER
);
CREATE INDEX IF NOT EXISTS batches_by_account ON batches (account_id, seq);
CREATE INDEX IF NOT EXISTS batches_by_status ON batches (status);
CREATE TABLE IF NOT EXISTS results (
  batch_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  custom_id TEXT NOT NULL,
  model TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  response TEXT,
  error TEXT,
  settled_ms INTEGER,
  retry_at INTEGER,
  PRIMARY KEY (batch_id, idx)
);
CREATE INDEX IF NOT EXISTS results_retrying ON results (batch_id, retry_at) WHERE retry_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS row_chunks (
  batch_id TEXT NOT NULL,
  first INTEGER NOT NULL,
  type TEXT NOT NULL,
  first_seq INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (batch_id, first)
);
CREATE TABLE IF NOT EXISTS tombstones (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  deleted_at INTEGER NOT NULL,
  reason TEXT NOT NULL,
  purged INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS tombstones_unpurged ON tombstones (purged) WHERE purged = 0;
CREATE TABLE IF NOT EXISTS accounts (
  id TEXT PRIMARY KEY,
  tier TEXT NOT NULL,
  status TEXT NOT NULL,
  daily_quota_usd REAL,
  concurrency INTEGER,
  models TEXT,
  created_at INTEGER NOT NULL,
  max_priority TEXT
);
CREATE TABLE IF NOT EXISTS api_keys (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  key_sha256 TEXT NOT NULL UNIQUE,
  expires_at INTEGER,
  revoked_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS usage (
  account_id TEXT NOT NULL,
  day INTEGER NOT NULL,
  usd REAL NOT NULL,
  PRIMARY KEY (account_id, day)
);
`

// 2: request bodies are no longer copied into an `inputs` table; `row_chunks` says where in the log they are.
// 3: `row_chunks` names the type of the event holding the bodies (`row_bodies`, or `rows_added` before those).
// 4: a batch is final only once no row runs (`closing`, `final_written`), and deleted batches leave `tombstones`.
// 5: batches count their completed rows' tokens (`input_tokens` …), which rows completed earlier in the log fill.
// 6: batches know when their first row started and when they ended (`started_ms`, `ended_ms`), results when their
//    row settled (`settled_ms`), which earlier events fill.
// 7: batches count their rows asleep until a retry (`retrying`) and know when a row last moved (`moved_ms`), results
//    when a sleeping row's retry is due (`retry_at`): what `waiting_on` is told by.
const SCHEMA_VERSION = 7
const OLDER_TABLES = ["offsets", "partial_window", "batches", "results", "inputs", "row_chunks", "tombstones", "accounts", "api_keys", "usage", "responses", "completion_events"]

/** A read model in an older layout is emptied: with its offsets gone, the projections rebuild it from the log. */
const migrate = (db: Database.Database) => {
  const version = db.pragma("user_version", { simple: true }) as number
  if (version >= SCHEMA_VERSION) return
  db.transaction(() => {
    for (const table of OLDER_TABLES) db.exec(`DROP TABLE IF EXISTS ${table}`)
    db.exec(schema)
    db.pragma(`user_version = ${SCHEMA_VERSION}`)
  })()
}

/** Columns added after version 5, each nullable: added in place, since no earlier event fills them. */
const addedColumns: ReadonlyArray<readonly [table: string, column: string, type: string]> = [
  ["batches", "rerun_of", "TEXT"],
  ["batches", "endpoint", "TEXT"],
  ["batches", "input_file_id", "TEXT"],
  ["batches", "priority", "TEXT"],
  ["accounts", "max_priority", "TEXT"],
  ["streams", "priority", "TEXT"],
]
const addColumns = (db: Database.Database) => {
  for (const [table, column, type] of addedColumns) {
    const has = (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).some((c) => c.name === column)
    if (!has) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`)
  }
}

/** How often the read model's WAL is copied into its file. */
const CHECKPOINT_EVERY_MS = 1_000

/**
 * The read model's checkpoints on a thread of their own (as the embedded log's), once a second, instead
 * of SQLite's automatic one, which ran in the projector's commit that grew the WAL past 1,000 pages: a
 * 5-15 ms turn of the dispatch thread every few hundred rows at full speed. None for a database in memory.
 */
const checkpointsOf = (db: Database.Database, path: string) => {
  if (path === ":memory:" || path === "") return undefined
  db.pragma("wal_autocheckpoint = 0")
  const checkpoints = walCheckpoints(path, 5_000, checkpointOn(db))
  const timer = setInterval(checkpoints.run, CHECKPOINT_EVERY_MS).unref()
  return {
    /** Synchronous when the thread never started, so that a read model opened and closed at once stays synchronous. */
    close: (): Promise<void> | undefined => {
      clearInterval(timer)
      return checkpoints.running() ? checkpoints.close() : undefined
    },
  }
}

/** The SQLite file every projection writes and the HTTP layer reads; one connection, used synchronously. */
export class ReadModel extends Context.Tag("Projections/ReadModel")<ReadModel, Database.Database>() {
  static readonly layer = (path: string) =>
    Layer.scoped(
      ReadModel,
      Effect.acquireRelease(
        Effect.sync(() => {
          const db = new Database(path)
          db.pragma("journal_mode = WAL")
          db.pragma("synchronous = NORMAL")
          db.pragma("busy_timeout = 5000")
          // 4 MB rather than better-sqlite3's 16: the rows being settled and the pages being read fit in it,
          // and the OS caches the file anyway.
          db.pragma("cache_size = -4000")
          // An INSERT … SELECT (the completion-events feed's, a row's each) writes its statement journal to a
          // temporary file by default: 31 µs a row through pwrite, 8 µs in memory (a 20,000-row batch measured apart).
          db.pragma("temp_store = MEMORY")
          migrate(db)
          db.exec(schema)
          db.exec(webhookTables)
          db.exec(responseTables)
          db.exec(streamTables)
          db.exec(completionTables)
          db.exec(fileTables)
          db.exec(lifecycleSeqTable)
          addColumns(db)
          return { db, checkpoints: checkpointsOf(db, path) }
        }),
        ({ db, checkpoints }) =>
          // The thread's connection first: the last one closed takes the WAL with it.
          Effect.suspend(() => {
            const closing = checkpoints?.close()
            return closing === undefined ? Effect.sync(() => db.close()) : Effect.promise(() => closing.then(() => db.close()))
          }),
      ).pipe(Effect.map(({ db }) => db)),
    )
}
