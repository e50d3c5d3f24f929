import * as Options from "@effect/cli/Options"
import { Option } from "effect"
import { DEFAULT_PRIORITY, Priorities, type Priority } from "../domain/scheduling/priority.js"
import { choiceOption } from "./choiceOption.js"

/** `--priority high|standard|background`; left out of the request when not given, so the server's default holds. */
export const priorityOption = (description: string) =>
  choiceOption("priority", Priorities).pipe(Options.withDescription(description), Options.optional)

export const priorityField = (priority: Option.Option<Priority>): { readonly priority?: Priority } =>
  Option.match(priority, { onNone: () => ({}), onSome: (p) => ({ priority: p }) })

/** `, priority high` for anything but standard, which is said nowhere: what a summary line adds. */
export const shownPriority = (priority: Priority | undefined) => (priority === undefined || priority === DEFAULT_PRIORITY ? "" : `, priority ${priority}`)
