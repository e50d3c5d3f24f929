import type { Priority } from "./priority.js"

/*
 * Weighted, not strict: while `high` and `standard` work both wait on a model, `high` takes
 * HIGH_STARTS of every SHARE_CYCLE starts and `standard` the rest, so a stream of `high` work never
 * starves `standard`. `background` takes a start only when neither wants one.
 */

export const HIGH_STARTS = 9
export const SHARE_CYCLE = 10

/** `high` starts in a row since `standard` last took one while both waited. */
export interface Shares {
  readonly highRun: number
}
export const noShares: Shares = { highRun: 0 }

/** Which priorities have a row that may start now. */
export interface Wanting {
  readonly high: boolean
  readonly standard: boolean
  readonly background: boolean
}

export interface Turn {
  readonly priority: Priority | undefined
  readonly shares: Shares
}

/**
 * The priority whose turn the next start is. `standard` gets every SHARE_CYCLE-th start while both
 * wait; alone, either takes every start (and `high` alone does not run up a debt: `standard`
 * arriving waits at most HIGH_STARTS starts).
 */
export const nextTurn = (wanting: Wanting, shares: Shares): Turn => {
  if (wanting.high && wanting.standard) {
    return shares.highRun < HIGH_STARTS ? { priority: "high", shares: { highRun: shares.highRun + 1 } } : { priority: "standard", shares: noShares }
  }
  if (wanting.high) return { priority: "high", shares: noShares }
  if (wanting.standard) return { priority: "standard", shares: noShares }
  return { priority: wanting.background ? "background" : undefined, shares: noShares }
}
