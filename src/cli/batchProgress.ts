import { Effect } from "effect"
import type { Batch } from "../sdk/index.js"
import { ExitCode } from "./failure.js"
import { shownPriority } from "./priorityOption.js"
import { type ProgressView, progressBar, progressLogLine, type Sample } from "./progress.js"

/** The exit code of a final status: only `completed` is success, whatever its rows' outcomes. */
export const finalExit: Record<string, number> = {
  completed: ExitCode.ok,
  failed: ExitCode.failed,
  expired: ExitCode.expired,
  cancelled: ExitCode.cancelled,
}

export const summary = (b: Batch) =>
  `${b.id} ${b.status}: ${b.request_counts.completed + b.request_counts.failed}/${b.request_counts.total} done, ${b.request_counts.failed} failed${shownPriority(b.priority)}`

const view = (b: Batch): ProgressView => ({
  id: b.id,
  status: b.status,
  total: b.request_counts.total,
  completed: b.request_counts.completed,
  failed: b.request_counts.failed,
  estimatedCompletionAt: b.estimated_completion_at ?? null,
  rowsAhead: b.rows_ahead ?? null,
})

/** The line `wait` prints when why the batch waits changes: its reason, since when, and the detail; or that it waits no more. */
export const waitingLine = (b: Batch): string => {
  const w = b.waiting_on
  if (w === null || w === undefined) return `${b.id} waiting on nothing`
  return `${b.id} waiting on ${w.reason} since ${new Date(w.since * 1000).toISOString()}: ${w.detail}`
}

/**
 * One batch's progress on stderr while it is polled: on a terminal a bar redrawn in place (`end` closes
 * its line), elsewhere a line whenever its counts or status change.
 */
export const progressReporter = () => {
  const tty = process.stderr.isTTY === true
  let first: Sample | undefined
  let lastKey = ""
  // Absent from a server without waiting_on: nothing is said then.
  let lastWaiting: string | undefined = undefined
  const onProgress = (b: Batch) => {
    const latest = { atMs: Date.now(), done: b.request_counts.completed + b.request_counts.failed }
    first ??= latest
    const waiting = b.waiting_on === undefined ? undefined : (b.waiting_on?.reason ?? "")
    if (waiting !== undefined && waiting !== lastWaiting && !(lastWaiting === undefined && waiting === "")) {
      process.stderr.write(`${tty ? "\r\x1b[2K" : ""}${waitingLine(b)}\n`)
    }
    lastWaiting = waiting
    if (tty) {
      process.stderr.write(`\r\x1b[2K${progressBar(view(b), first, latest)}`)
      return
    }
    // The rate and ETA change on every poll; a log line is worth printing when the counts or status do.
    const key = `${b.status} ${latest.done}`
    if (key !== lastKey) process.stderr.write(`${progressLogLine(view(b), first, latest)}\n`)
    lastKey = key
  }
  const end = Effect.sync(() => void (tty && process.stderr.write("\n")))
  return { onProgress, end }
}
