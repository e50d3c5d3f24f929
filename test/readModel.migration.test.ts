import Database from "better-sqlite3"
import { Context, Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { resumeOffset } from "../src/projections/Projector.js"
import { ReadModel } from "../src/projections/ReadModel.js"
import { accountReads } from "../src/projections/accountReads.js"
import { batchReads, toBatchObject } from "../src/projections/batchReads.js"

const dir = mkdtempSync(join(tmpdir(), "sluice-migration-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const tables = (db: Database.Database) =>
  (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).pluck().all() as Array<string>).filter(
    (name) => !name.startsWith("sqlite_"),
  )

const opened = <A>(path: string, use: (db: Database.Database) => A): A =>
  Effect.runSync(Effect.scoped(Effect.map(Layer.build(ReadModel.layer(path)), (context) => use(Context.get(context, ReadModel)))))

describe("a read model in an older layout", () => {
  it("is emptied on open, offsets included, so the projections rebuild it from the log", () => {
    const path = join(dir, "old.sqlite")
    // The layout before request bodies moved out of the read model: bodies copied into `inputs`.
    const old = new Database(path)
    old.exec(`
      CREATE TABLE offsets (name TEXT PRIMARY KEY, seq INTEGER NOT NULL, resume_seq INTEGER NOT NULL);
      CREATE TABLE results (batch_id TEXT NOT NULL, idx INTEGER NOT NULL, custom_id TEXT NOT NULL, model TEXT NOT NULL,
        status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, response TEXT, error TEXT, PRIMARY KEY (batch_id, idx));
      CREATE TABLE inputs (batch_id TEXT NOT NULL, idx INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (batch_id, idx));
      INSERT INTO offsets VALUES ('batches', 40, 41), ('results', 40, 41), ('accounts', 40, 41);
      INSERT INTO results (batch_id, idx, custom_id, model, status) VALUES ('batch_1', 0, 'a', 'm', 'queued');
      INSERT INTO inputs VALUES ('batch_1', 0, '{}');
      CREATE TABLE partial_window (id INTEGER PRIMARY KEY CHECK (id = 0), seq INTEGER NOT NULL, event INTEGER NOT NULL);
      INSERT INTO partial_window VALUES (0, 41, 3);
    `)
    old.close()

    opened(path, (db) => {
      expect(tables(db)).not.toContain("inputs")
      expect(tables(db)).toContain("row_chunks")
      expect(db.prepare(`SELECT count(*) FROM results`).pluck().get()).toBe(0)
      expect(resumeOffset(db)).toBe(1)
      // Nor does it go on inside a window it had applied in part: it applies every window whole again.
      expect(db.prepare(`SELECT count(*) FROM partial_window`).pluck().get()).toBe(0)
      expect(db.pragma("user_version", { simple: true })).toBe(7)
      db.prepare(`INSERT INTO offsets VALUES ('batches', 7, 8)`).run()
    })
    // Opened again in the current layout: kept as it is.
    opened(path, (db) => expect(resumeOffset(db)).toBe(8))
  })

  it("a version 4 read model, whose batches count no tokens, is emptied too, so that its completed rows' tokens are counted from the log", () => {
    const path = join(dir, "v4.sqlite")
    opened(path, (db) => {
      db.prepare(`INSERT INTO offsets VALUES ('batches', 40, 41), ('results', 40, 41), ('accounts', 40, 41)`).run()
      db.prepare(
        `INSERT INTO batches (id, account_id, key_id, seq, status, completion_window, created_at, created_ms, expires_at, total, completed, models)
         VALUES ('batch_1', 'acct', 'key', 3, 'completed', '24h', 1, 1000, 86401, 1, 1, '[]')`,
      ).run()
    })
    // Version 4's layout: the same tables, without the batches' token columns.
    const old = new Database(path)
    for (const column of ["input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens", "total_tokens"]) {
      old.exec(`ALTER TABLE batches DROP COLUMN ${column}`)
    }
    old.pragma("user_version = 4")
    old.close()

    opened(path, (db) => {
      expect(db.prepare(`SELECT count(*) FROM batches`).pluck().get()).toBe(0)
      expect(resumeOffset(db)).toBe(1)
      expect(db.pragma("user_version", { simple: true })).toBe(7)
      const columns = (db.prepare(`PRAGMA table_info(batches)`).all() as Array<{ name: string }>).map((c) => c.name)
      expect(columns).toEqual(expect.arrayContaining(["input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens", "total_tokens"]))
    })
  })

  /** A read model of the current layout holding a batch, made older: `older` undoes a later version's columns. */
  const writtenAtVersion = (name: string, status: string, total: number, older: string, version: number) => {
    const path = join(dir, name)
    opened(path, (db) => {
      db.prepare(`INSERT INTO offsets VALUES ('batches', 40, 41), ('results', 40, 41)`).run()
      db.prepare(
        `INSERT INTO batches (id, account_id, key_id, seq, status, completion_window, created_at, created_ms, expires_at, total, completed, models)
         VALUES ('batch_1', 'acct', 'key', 3, ?, '24h', 1, 1000, 86401, ?, 1, '[]')`,
      ).run(status, total)
    })
    const old = new Database(path)
    old.exec(older)
    old.pragma(`user_version = ${version}`)
    old.close()
    return path
  }
  /** Opened again, it is empty, rebuilt from the log's start, at the current version; answers its tables' columns. */
  const emptiedOnOpen = (path: string, check: (columns: (table: string) => Array<string>) => void) =>
    opened(path, (db) => {
      expect(db.prepare(`SELECT count(*) FROM batches`).pluck().get()).toBe(0)
      expect(resumeOffset(db)).toBe(1)
      expect(db.pragma("user_version", { simple: true })).toBe(7)
      check((table) => (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((c) => c.name))
    })

  it("a version 5 read model, whose batches and results hold no times, is emptied too, so that when each row settled is read from the log", () => {
    const path = writtenAtVersion(
      "v5.sqlite",
      "completed",
      1,
      `ALTER TABLE batches DROP COLUMN started_ms; ALTER TABLE batches DROP COLUMN ended_ms; ALTER TABLE results DROP COLUMN settled_ms`,
      5,
    )
    emptiedOnOpen(path, (columns) => {
      expect(columns("batches")).toEqual(expect.arrayContaining(["started_ms", "ended_ms"]))
      expect(columns("results")).toContain("settled_ms")
    })
  })

  it("a version 6 read model, whose batches count no sleeping rows and results hold no retry times, is emptied too, so that waiting_on reads them from the log", () => {
    const path = writtenAtVersion(
      "v6.sqlite",
      "in_progress",
      2,
      `DROP INDEX results_retrying; ALTER TABLE batches DROP COLUMN retrying; ALTER TABLE batches DROP COLUMN moved_ms; ALTER TABLE results DROP COLUMN retry_at`,
      6,
    )
    emptiedOnOpen(path, (columns) => {
      expect(columns("batches")).toEqual(expect.arrayContaining(["retrying", "moved_ms"]))
      expect(columns("results")).toContain("retry_at")
    })
  })

  it("a read model of this version from before priorities gains their columns in place, its rows and offsets kept, each read as standard", () => {
    const path = join(dir, "before-priorities.sqlite")
    opened(path, (db) => {
      db.prepare(`INSERT INTO offsets VALUES ('batches', 40, 41), ('accounts', 40, 41)`).run()
      db.prepare(
        `INSERT INTO batches (id, account_id, key_id, seq, status, completion_window, created_at, created_ms, expires_at, total, models)
         VALUES ('batch_1', 'acct', 'key', 3, 'completed', '24h', 1, 1000, 86401, 1, '[]')`,
      ).run()
      db.prepare(`INSERT INTO accounts (id, tier, status, created_at) VALUES ('acct', 'internal', 'active', 1)`).run()
    })
    const old = new Database(path)
    old.exec(`ALTER TABLE batches DROP COLUMN priority; ALTER TABLE accounts DROP COLUMN max_priority; ALTER TABLE streams DROP COLUMN priority`)
    old.close()

    opened(path, (db) => {
      expect(resumeOffset(db)).toBe(41)
      const columns = (table: string) => (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((c) => c.name)
      expect(columns("batches")).toContain("priority")
      expect(columns("accounts")).toContain("max_priority")
      expect(columns("streams")).toContain("priority")
      expect(toBatchObject(batchReads(db).one("batch_1")!).priority).toBe("standard")
      expect(accountReads(db).account("acct")).toMatchObject({ id: "acct", max_priority: null })
    })
  })
})
