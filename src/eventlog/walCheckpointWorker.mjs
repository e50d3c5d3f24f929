// The embedded log's WAL checkpoints, on a thread of their own (src/eventlog/walCheckpoints.ts): a
// checkpoint copies the last second's appends into the database file, 15–50 ms under load, which on
// the dispatch thread was a turn of its event loop that nothing else could use.
import { createRequire } from "node:module"
import { parentPort, workerData } from "node:worker_threads"

const port = parentPort
if (port === null) throw new Error("walCheckpointWorker.mjs runs as a worker thread")
const Database = createRequire(import.meta.url)("better-sqlite3")
const db = new Database(workerData.path)
db.pragma(`busy_timeout = ${workerData.busyTimeoutMs}`)

port.on("message", (message) => {
  if (message === "checkpoint") {
    try {
      db.pragma("wal_checkpoint(PASSIVE)")
    } catch {
      // Busy or failing: the next commit asks for another; the WAL keeps every message meanwhile.
    }
  } else if (message === "close") {
    db.close()
    port.close()
  }
})
