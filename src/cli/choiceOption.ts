import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import { Effect } from "effect"

/** `--name` taking one of `choices`, refused with a message that names the option and the value given, which @effect/cli's own choice does not. */
export const choiceOption = <const C extends ReadonlyArray<string>>(name: string, choices: C) =>
  Options.text(name).pipe(
    Options.mapEffect((value) =>
      choices.includes(value)
        ? Effect.succeed(value as C[number])
        : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name} must be one of ${choices.join(", ")}, got '${value}'`))),
    ),
  )
