import { existsSync } from "node:fs"
import Database from "better-sqlite3"

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
