import { Data } from "effect"

/**
 * What a model's lease owner writes its lanes under: the model, the instance, and the lease's fencing
 * revision. `valid` is the owner's own check that the lease has not lapsed (it renews well inside the
 * TTL, so a lease not renewed for longer may already be another's): a paused owner that wakes up stops
 * before it writes, and the log refuses what it wrote too late.
 */
export interface LaneHold {
  readonly model: string
  readonly owner: string
  readonly revision: number
  readonly valid: () => boolean
  /** Wall-clock ms until which `valid` holds without another renewal (infinite where no lease lapses). */
  readonly validThrough: () => number
}

/** The model's lease is no longer this instance's: the log refused a window, or the lease lapsed. */
export class LeaseLost extends Data.TaggedError("LeaseLost")<{
  readonly model: string
  readonly reason: string
}> {}
