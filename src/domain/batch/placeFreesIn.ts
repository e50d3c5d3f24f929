/** An unfinished batch as the account's limit sees it. Times are Unix milliseconds. */
export interface UnfinishedBatch {
  readonly total: number
  /** Rows completed, failed, expired or cancelled. */
  readonly settled: number
  /** When it was created: its pace is the rows it has settled since. */
  readonly createdAt: number
  readonly expiresAt: number
  /** It stopped starting rows (cancel, failure, expiry) and waits only for its running rows. */
  readonly closed: boolean
}

/** When no batch has settled a row yet, nothing tells its pace: a short wait, as a poll would. */
const UNKNOWN_SECONDS = 5

/**
 * How long until one of the account's unfinished batches is likely to finish, which frees a place:
 * each batch's rows left at the pace it has settled rows since it was created, the soonest of them;
 * and no later than the first open batch's window end, when its idle rows expire. In whole seconds,
 * never less than 1.
 */
export const secondsUntilAPlaceFrees = (batches: ReadonlyArray<UnfinishedBatch>, now: number): number => {
  let atPace = Infinity
  let windowEnds = Infinity
  for (const batch of batches) {
    const left = batch.total - batch.settled
    if (left <= 0) return 1
    const elapsed = (now - batch.createdAt) / 1000
    if (batch.settled > 0 && elapsed > 0) atPace = Math.min(atPace, left / (batch.settled / elapsed))
    if (!batch.closed) windowEnds = Math.min(windowEnds, Math.max(0, (batch.expiresAt - now) / 1000))
  }
  const estimate = Number.isFinite(atPace) ? atPace : UNKNOWN_SECONDS
  return Math.max(1, Math.ceil(Math.min(estimate, windowEnds)))
}
