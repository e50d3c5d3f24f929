import { type BatchStatus, FinalBatchStatuses } from "../sdk/index.js"

export interface ProgressView {
  readonly id: string
  readonly status: BatchStatus
  readonly total: number
  readonly completed: number
  readonly failed: number
  /** The server's estimate (Unix seconds), preferred to the rate seen between polls when it has one. */
  readonly estimatedCompletionAt?: number | null
  readonly rowsAhead?: number | null
}

export interface Sample {
  readonly atMs: number
  readonly done: number
}

const BAR_WIDTH = 24

const duration = (seconds: number): string => {
  const s = Math.round(seconds)
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`
}

/**
 * Rows per second since the first sample, and the time left at that rate; neither is known from a
 * single sample (a batch that finished before the first poll has no rate to show).
 */
export const pace = (first: Sample, latest: Sample, total: number) => {
  const seconds = (latest.atMs - first.atMs) / 1000
  if (seconds <= 0) return { rate: undefined, eta: undefined }
  const rate = (latest.done - first.done) / seconds
  return { rate, eta: rate > 0 ? (total - latest.done) / rate : undefined }
}

export const progressText = (view: ProgressView, first: Sample, latest: Sample): string => {
  const done = view.completed + view.failed
  const { rate, eta } = pace(first, latest, view.total)
  const parts = [`${done}/${view.total} done`, `${view.failed} failed`]
  if (rate !== undefined) parts.push(`${rate.toFixed(1)} rows/s`)
  // A final batch has nothing left to wait for, whatever its counts say.
  const serverEta = view.estimatedCompletionAt == null ? undefined : Math.max(0, view.estimatedCompletionAt - latest.atMs / 1000)
  const left = serverEta ?? eta
  if (!FinalBatchStatuses.has(view.status) && left !== undefined) parts.push(`ETA ${duration(left)}`)
  if (!FinalBatchStatuses.has(view.status) && view.rowsAhead != null && view.rowsAhead > 0) parts.push(`${view.rowsAhead} rows ahead`)
  return parts.join(", ")
}

/** One line for a terminal, redrawn in place: a bar, the counts, the rate and the time left. */
export const progressBar = (view: ProgressView, first: Sample, latest: Sample): string => {
  const done = view.completed + view.failed
  const filled = view.total === 0 ? BAR_WIDTH : Math.min(BAR_WIDTH, Math.floor((done / view.total) * BAR_WIDTH))
  return `[${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}] ${progressText(view, first, latest)} (${view.status})`
}

/** A plain line for logs and pipes, printed when something changed. */
export const progressLogLine = (view: ProgressView, first: Sample, latest: Sample): string =>
  `${view.id} ${view.status}: ${progressText(view, first, latest)}`
