import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import { Effect, Either } from "effect"
import { isObject } from "../domain/json.js"

const FORMS = `a JSON object of strings ('{"project":"x"}') or key=value, repeatable`

/**
 * Each `--metadata` value is a JSON object of strings or one key=value pair; later values win. A value
 * that starts like JSON (`{` or `[`) is read as JSON, so a broken object is reported, not taken for a key.
 */
export const parseMetadata = (values: ReadonlyArray<string>): Either.Either<Record<string, string> | undefined, string> => {
  if (values.length === 0) return Either.right(undefined)
  // A Map, so that a key such as `__proto__` is a key like any other.
  const metadata = new Map<string, string>()
  for (const value of values) {
    if (/^\s*[{[]/.test(value)) {
      let parsed: unknown
      try {
        parsed = JSON.parse(value)
      } catch (error) {
        return Either.left(`--metadata '${value}' is not valid JSON (${(error as Error).message}); give ${FORMS}`)
      }
      if (!isObject(parsed)) return Either.left(`--metadata '${value}' is not a JSON object; give ${FORMS}`)
      for (const [key, v] of Object.entries(parsed)) {
        if (typeof v !== "string") return Either.left(`--metadata: the value of "${key}" is not a string; metadata values are strings`)
        metadata.set(key, v)
      }
      continue
    }
    const eq = value.indexOf("=")
    if (eq <= 0) return Either.left(`--metadata '${value}' is neither JSON nor key=value; give ${FORMS}`)
    metadata.set(value.slice(0, eq), value.slice(eq + 1))
  }
  return Either.right(Object.fromEntries(metadata))
}

/** `--metadata`, described as `whose` metadata it sets. */
export const metadataOptionOf = (whose: string) =>
  Options.text("metadata").pipe(
    Options.withDescription(`${whose} metadata: ${FORMS}`),
    Options.repeated,
    Options.mapEffect((values) =>
      Either.match(parseMetadata(values), {
        onLeft: (message) => Effect.fail(ValidationError.invalidValue(HelpDoc.p(message))),
        onRight: Effect.succeed,
      }),
    ),
  )

export const metadataOption = metadataOptionOf("The batch's")
