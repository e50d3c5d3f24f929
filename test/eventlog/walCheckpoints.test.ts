import Database from "better-sqlite3"
import { mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { walCheckpoints } from "../../src/eventlog/walCheckpoints.js"
import { waitFor } from "../support/waitFor.js"

/** A WAL database as the embedded log keeps it: no automatic checkpoints, so its rows stay in the WAL until one runs. */
const walDatabase = (path: string) => {
  const db = new Database(path)
  db.pragma("journal_mode = WAL")
  db.pragma("wal_autocheckpoint = 0")
  db.exec("CREATE TABLE messages (seq INTEGER PRIMARY KEY, data BLOB NOT NULL)")
  const insert = db.prepare("INSERT INTO messages (data) VALUES (?)")
  db.transaction(() => {
    for (let i = 0; i < 2_000; i++) insert.run(Buffer.alloc(1_000, i % 256))
  })()
  return db
}

describe("the embedded log's checkpoints on a thread of their own", () => {
  const dirs: Array<string> = []
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })))
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-wal-"))
    dirs.push(dir)
    return dir
  }

  it("copy the WAL into the database file on the checkpoint thread, and close its connection", async () => {
    const path = join(tempDir(), "log.sqlite")
    const db = walDatabase(path)
    const before = statSync(path).size
    let inline = 0
    const checkpoints = walCheckpoints(path, 5_000, () => inline++)
    checkpoints.run()
    // The 2 MB of rows reach the database file: what only a checkpoint does with automatic ones off.
    await waitFor("the database file holds the rows", () => statSync(path).size > before + 1_000_000, { timeoutMs: 20_000 })
    await checkpoints.close()
    expect(inline).toBe(0)
    // Its connection is closed: ours is the last, so closing it takes the WAL away.
    db.close()
    expect(() => statSync(`${path}-wal`)).toThrow()
  })

  it("run on the caller's thread once the thread has failed", async () => {
    // A directory that does not exist: the thread's connection cannot open.
    const path = join(tempDir(), "gone", "log.sqlite")
    let inline = 0
    const checkpoints = walCheckpoints(path, 5_000, () => inline++)
    checkpoints.run()
    // Until the thread has failed, runs go to it and are lost, as a busy checkpoint is.
    await waitFor("a checkpoint runs inline", () => {
      checkpoints.run()
      return inline > 0
    }, { timeoutMs: 20_000, everyMs: 50 })
    await checkpoints.close()
  })
})
