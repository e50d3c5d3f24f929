import { existsSync } from "node:fs"
import { join } from "node:path"
import Database from "better-sqlite3"

export type LogBackend = "embedded" | "nats"

/** One read model per log backend, as `main.ts` names it: its offsets are positions in that log only. */
export const readModelPath = (dataDir: string, backend: LogBackend): string => join(dataDir, `read.${backend}.sqlite`)

/**
 * Whether another process has the read model open. A WAL-mode connection keeps a shared lock on the
 * file for as long as it is open, so an exclusive lock is granted only when no service holds it.
 */
export const readModelInUse = (path: string): boolean => {
  if (!existsSync(path)) return false
  const db = new Database(path, { fileMustExist: true, timeout: 0 })
  try {
    db.pragma("locking_mode = EXCLUSIVE")
    db.exec("BEGIN EXCLUSIVE; COMMIT")
    return false
  } catch (e) {
    if (e instanceof Database.SqliteError && (e.code === "SQLITE_BUSY" || e.code === "SQLITE_LOCKED")) return true
    throw e
  } finally {
    db.close()
  }
}

export const openReadOnly = (path: string): Database.Database => new Database(path, { readonly: true, fileMustExist: true })
