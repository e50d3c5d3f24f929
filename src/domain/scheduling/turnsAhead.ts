/** A batch's rows on one model as the turn-taking sees them. */
export interface QueuedBatch {
  readonly accountId: string
  readonly batchId: string
  /** Rows waiting for a slot (waiting for a retry included). */
  readonly queued: number
  readonly running: number
}

/**
 * How many rows of other batches the turns (see FairQueue) start on one model before the last of
 * `target`'s `queued` rows. Within its account's turns the batches take turns, so each other batch
 * of the account starts at most as many rows as the target has left; the account needs that many
 * turns in all, and every other account starts at most one row per turn of it. The cursor's place
 * moves this by at most one row per account, which an estimate can ignore.
 */
export const rowsAhead = (
  queue: ReadonlyArray<QueuedBatch>,
  target: { readonly accountId: string; readonly batchId: string; readonly queued: number },
): number => {
  if (target.queued <= 0) return 0
  let ownAhead = 0
  const others = new Map<string, number>()
  for (const b of queue) {
    if (b.batchId === target.batchId || b.queued <= 0) continue
    if (b.accountId === target.accountId) ownAhead += Math.min(b.queued, target.queued)
    else others.set(b.accountId, (others.get(b.accountId) ?? 0) + b.queued)
  }
  const accountTurns = target.queued + ownAhead
  let ahead = ownAhead
  for (const queued of others.values()) ahead += Math.min(queued, accountTurns)
  return ahead
}

/**
 * When the target's last row on a model should finish, in ms, from the model's measured rate (rows
 * settled per ms): every row now running and every row ahead settles first, then the target's own.
 * Undefined without a rate to go on.
 */
export const finishesAt = (
  now: number,
  ratePerMs: number | undefined,
  work: { readonly runningOnModel: number; readonly ahead: number; readonly queued: number; readonly running: number },
): number | undefined => {
  if (work.queued + work.running <= 0) return now
  if (ratePerMs === undefined || !(ratePerMs > 0)) return undefined
  const rows = work.queued > 0 ? work.runningOnModel + work.ahead + work.queued : work.runningOnModel
  return now + rows / ratePerMs
}
