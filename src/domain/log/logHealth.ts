/**
 * What an instance knows of its log: the verdict of the latest-begun operation that has ended. An
 * operation is numbered when it begins; one that ends after a later-begun one was answered is stale
 * (a probe sent into a connection that was then reset times out after the reconnected log answered
 * newer ones) and changes nothing.
 */
export interface LogHealthState {
  /** Why the log cannot take appends, or undefined while it can. */
  readonly down: string | undefined
  /** Since when (ms) it has been down, while it is. */
  readonly since: number | undefined
  /** The number of the operation whose verdict this is; -1 before any. */
  readonly basis: number
}

export const initialLogHealth: LogHealthState = { down: undefined, since: undefined, basis: -1 }

export type LogVerdict = { readonly ok: true } | { readonly ok: false; readonly why: string }

/** The state once operation `begun` has ended with `verdict` at `now`. */
export const observeLog = (state: LogHealthState, begun: number, verdict: LogVerdict, now: number): LogHealthState => {
  if (begun < state.basis) return state
  if (verdict.ok) return { down: undefined, since: undefined, basis: begun }
  return { down: verdict.why, since: state.down === undefined ? now : state.since, basis: begun }
}
