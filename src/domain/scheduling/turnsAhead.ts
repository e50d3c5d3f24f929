import { DEFAULT_PRIORITY, type Priority } from "./priority.js"
import { HIGH_STARTS } from "./shares.js"

/** A batch's rows on one model as the turn-taking sees them. */
export interface QueuedBatch {
  readonly accountId: string
  readonly batchId: string
  /** Absent: standard. */
  readonly priority?: Priority
  /** Rows waiting for a slot (waiting for a retry included). */
  readonly queued: number
  readonly running: number
}

/**
 * How many rows of other batches the turns (see FairQueue) start on one model before the last of
 * `target`'s `queued` rows. Within its priority, its account's turns: within its account's turns the
 * batches take turns, so each other batch of the account starts at most as many rows as the target has
 * left; the account needs that many turns in all, and every other account starts at most one row per
 * turn of it. The cursor's place moves this by at most one row per account, which an estimate can
 * ignore. Between priorities, the shares (shares.ts): `standard` starts one row per HIGH_STARTS of
 * `high`'s, and `background` waits for both. Deadlines that jump the turns are not foreseen.
 */
export const rowsAhead = (
  queue: ReadonlyArray<QueuedBatch>,
  target: { readonly accountId: string; readonly batchId: string; readonly queued: number; readonly priority?: Priority },
): number => {
  if (target.queued <= 0) return 0
  const priority = target.priority ?? DEFAULT_PRIORITY
  let ownAhead = 0
  const others = new Map<string, number>()
  const byPriority = { high: 0, standard: 0, background: 0 }
  for (const b of queue) {
    if (b.batchId === target.batchId || b.queued <= 0) continue
    const theirs = b.priority ?? DEFAULT_PRIORITY
    if (theirs !== priority) byPriority[theirs] += b.queued
    else if (b.accountId === target.accountId) ownAhead += Math.min(b.queued, target.queued)
    else others.set(b.accountId, (others.get(b.accountId) ?? 0) + b.queued)
  }
  const accountTurns = target.queued + ownAhead
  let ahead = ownAhead
  for (const queued of others.values()) ahead += Math.min(queued, accountTurns)
  // The starts of its own priority until its last row: the other priorities' share of them.
  const starts = ahead + target.queued
  if (priority === "high") return ahead + Math.min(byPriority.standard, Math.floor((starts - 1) / HIGH_STARTS))
  if (priority === "standard") return ahead + Math.min(byPriority.high, starts * HIGH_STARTS)
  return ahead + byPriority.high + byPriority.standard
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
