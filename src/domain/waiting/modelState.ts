/**
 * What a model's owner publishes with its lease, so that every instance tells the same story of why
 * the model's queued rows wait. Each fact carries when it began (ms, the actors' clock): the owner
 * keeps that across its renewals, so a reader on any instance shows the same `since`.
 */
export interface ModelState {
  /** Every batch slot is taken: `inUse` calls at the model of its `limit` now. */
  readonly full?: { readonly since: number; readonly inUse: number; readonly limit: number }
  /** Interactive requests (of every instance) hold `slots` of the model's batch slots. */
  readonly interactive?: { readonly since: number; readonly inFlight: number; readonly slots: number }
  /** Background-priority rows wait: interactive requests are in flight at the owner. */
  readonly backgroundHeld?: { readonly since: number }
  /** The upstream answered 429/503 (or queued long): the concurrency is cut to `concurrency` of `of`. */
  readonly pushback?: { readonly since: number; readonly concurrency: number; readonly of: number; readonly retryAfterS?: number }
}

/** The facts as the owner samples them now, before their start times are known. */
export interface ModelSample {
  readonly full?: { readonly inUse: number; readonly limit: number }
  readonly interactive?: { readonly inFlight: number; readonly slots: number }
  readonly backgroundHeld?: boolean
  readonly pushback?: { readonly concurrency: number; readonly of: number; readonly retryAfterS?: number }
}

const kept = <S extends object>(before: { readonly since: number } | undefined, now: S | undefined, at: number) =>
  now === undefined ? undefined : { ...now, since: before?.since ?? at }

/** The state after a sample at `at`: a fact seen again keeps its `since`, a new one begins at `at`, a gone one is dropped. */
export const nextModelState = (before: ModelState | undefined, sample: ModelSample, at: number): ModelState => {
  const state: {
    full?: ModelState["full"]
    interactive?: ModelState["interactive"]
    backgroundHeld?: ModelState["backgroundHeld"]
    pushback?: ModelState["pushback"]
  } = {}
  const full = kept(before?.full, sample.full, at)
  if (full !== undefined) state.full = full
  const interactive = kept(before?.interactive, sample.interactive, at)
  if (interactive !== undefined) state.interactive = interactive
  if (sample.backgroundHeld === true) state.backgroundHeld = { since: before?.backgroundHeld?.since ?? at }
  const pushback = kept(before?.pushback, sample.pushback, at)
  if (pushback !== undefined) state.pushback = pushback
  return state
}
