import Database from "better-sqlite3"
import { Data, Effect, Layer } from "effect"
import { readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"

export class DataDirInUse extends Data.TaggedError("DataDirInUse")<{
  readonly dataDir: string
  /** The holder's pid as it wrote it, if it could be read. */
  readonly pid: number | undefined
}> {}

const LOCK_FILE = "instance.lock"
const PID_FILE = "instance.pid"

/**
 * One process per data directory: its log (when embedded) and its read models have one writer. The
 * lock is SQLite's exclusive lock on a file of its own, which the operating system lets go when the
 * process ends however it ends, so a kill -9 leaves nothing to clean up; the pid file beside it only
 * names the holder in the refusal.
 */
export const layer = (dataDir: string): Layer.Layer<never, DataDirInUse> =>
  Layer.scopedDiscard(
    Effect.acquireRelease(
      Effect.suspend(() => {
        const db = new Database(join(dataDir, LOCK_FILE), { timeout: 0 })
        try {
          db.pragma("journal_mode = DELETE")
          db.pragma("locking_mode = EXCLUSIVE")
          // A write under EXCLUSIVE locking mode keeps the lock until the connection closes.
          db.exec("BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS holder (pid INTEGER); DELETE FROM holder; COMMIT")
          db.prepare("INSERT INTO holder (pid) VALUES (?)").run(process.pid)
        } catch (e) {
          db.close()
          if (e instanceof Database.SqliteError && (e.code === "SQLITE_BUSY" || e.code === "SQLITE_LOCKED")) {
            return Effect.fail(new DataDirInUse({ dataDir, pid: readPid(dataDir) }))
          }
          throw e
        }
        writeFileSync(join(dataDir, PID_FILE), `${process.pid}\n`)
        return Effect.succeed(db)
      }),
      (db) =>
        Effect.sync(() => {
          rmSync(join(dataDir, PID_FILE), { force: true })
          db.close()
        }),
    ),
  )

const readPid = (dataDir: string): number | undefined => {
  try {
    const pid = Number.parseInt(readFileSync(join(dataDir, PID_FILE), "utf8"), 10)
    return Number.isFinite(pid) ? pid : undefined
  } catch {
    return undefined
  }
}
