import { once } from "node:events"
import { Worker } from "node:worker_threads"

export interface WalCheckpoints {
  /** One PASSIVE checkpoint of the log's WAL, run on the checkpoint thread. */
  readonly run: () => void
  /** Whether the thread has started (with the first checkpoint) and not ended. */
  readonly running: () => boolean
  /** Closes the thread's connection and ends it. */
  readonly close: () => Promise<void>
}

const CLOSE_WAIT_MS = 5_000

/** One PASSIVE checkpoint on the caller's own connection, where the thread cannot run them. */
export const checkpointOn = (db: { readonly pragma: (source: string) => unknown }) => () => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)")
  } catch {
    // Busy or failing: the next one copies what this one did not; the WAL keeps every page meanwhile.
  }
}

/**
 * The embedded log's checkpoints on a worker thread with a connection of its own to the same file
 * (WAL: a checkpoint from another connection runs beside the appends). The thread starts with the
 * first checkpoint. Should it fail to start or die, checkpoints run as `inline` does, on the caller's
 * thread, as they did before.
 */
export const walCheckpoints = (path: string, busyTimeoutMs: number, inline: () => void): WalCheckpoints => {
  let worker: Worker | undefined
  let failed = false
  const start = () => {
    const started = new Worker(new URL("./walCheckpointWorker.mjs", import.meta.url), { workerData: { path, busyTimeoutMs } })
    started.unref()
    started.on("error", () => {
      failed = true
      if (worker === started) worker = undefined
    })
    started.on("exit", () => {
      if (worker === started) worker = undefined
    })
    return started
  }
  return {
    run: () => {
      if (failed) return inline()
      worker ??= start()
      worker.postMessage("checkpoint")
    },
    running: () => worker !== undefined,
    close: async () => {
      const running = worker
      worker = undefined
      if (running === undefined) return
      const exited = once(running, "exit")
      running.postMessage("close")
      const timer = setTimeout(() => void running.terminate(), CLOSE_WAIT_MS)
      await exited.catch(() => undefined)
      clearTimeout(timer)
    },
  }
}
