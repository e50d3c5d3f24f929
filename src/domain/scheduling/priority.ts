import { Schema } from "effect"

/*
 * A batch's, response's or stream's priority on its model. Interactive requests stay above all three.
 * `high` work gets most of the starts while it waits, `standard` the rest (never none); `background`
 * runs only on slots nothing else wants (docs/scheduling.md).
 */

export const Priorities = ["high", "standard", "background"] as const
export const Priority = Schema.Literal(...Priorities)
export type Priority = typeof Priority.Type

/** What a batch, response or stream stored without one runs at, and what an account may use unless an admin allows more. */
export const DEFAULT_PRIORITY: Priority = "standard"

export const isPriority = (value: unknown): value is Priority =>
  typeof value === "string" && (Priorities as ReadonlyArray<string>).includes(value)

/** 0 for the highest. */
export const priorityRank = (priority: Priority): number => Priorities.indexOf(priority)

/** Whether an account allowed at most `allowed` may ask for `asked`. */
export const priorityAllowed = (asked: Priority, allowed: Priority): boolean => priorityRank(asked) >= priorityRank(allowed)
