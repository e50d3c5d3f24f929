import { Priorities, type Priority, isPriority } from "../scheduling/priority.js"

/** The `priority` a create (batch, response, stream) sent, or the refusal of what it sent. */
export type SentPriority =
  | { readonly _tag: "Absent" }
  | { readonly _tag: "Asked"; readonly priority: Priority }
  | { readonly _tag: "Refused"; readonly message: string }

export const notAPriority = (field: string, sent: unknown) => `'${field}' must be one of ${Priorities.join(", ")}, got ${JSON.stringify(sent)}`

/** Absent or null asks for nothing (a batch runs as `standard`, a stream's item as its stream). */
export const sentPriority = (sent: unknown, field = "priority"): SentPriority =>
  sent === undefined || sent === null
    ? { _tag: "Absent" }
    : isPriority(sent)
      ? { _tag: "Asked", priority: sent }
      : { _tag: "Refused", message: notAPriority(field, sent) }
