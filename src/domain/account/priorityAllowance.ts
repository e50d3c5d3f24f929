import { type Priority, priorityAllowed } from "../scheduling/priority.js"

/**
 * Why an account whose `max_priority` is `allowed` may not create work at `asked`, or undefined when it
 * may. An admin raises the allowance; quotas and slots are not part of it.
 */
export const priorityRefusal = (asked: Priority, allowed: Priority): string | undefined =>
  priorityAllowed(asked, allowed)
    ? undefined
    : `'priority' '${asked}' is above what this account may use: its max_priority is '${allowed}' (an admin can raise it)`
