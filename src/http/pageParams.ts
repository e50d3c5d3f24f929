import { Effect, Either } from "effect"
import { ResultStatus } from "../domain/api/index.js"
import { badRequest } from "./errors.js"

type Param = string | ReadonlyArray<string> | undefined
type BadRequest = ReturnType<typeof badRequest>

// Each parameter is parsed as a plain Either: the handlers yield it as an effect, and the HTTP fronts
// read it on every read with no effect to run.
const single = (name: string, value: Param): Either.Either<string | undefined, BadRequest> =>
  typeof value === "string" || value === undefined ? Either.right(value) : Either.left(badRequest(`'${name}' may be given only once`, name))

export const parseLimit = (value: Param, max: number, fallback: number): Either.Either<number, BadRequest> =>
  Either.flatMap(single("limit", value), (text) => {
    if (text === undefined) return Either.right(fallback)
    const n = /^[0-9]{1,7}$/.test(text) ? Number(text) : Number.NaN
    return n >= 1 && n <= max ? Either.right(n) : Either.left(badRequest(`'limit' must be a whole number from 1 to ${max}, got '${text}'`, "limit"))
  })

export const parseAfter = (value: Param) => single("after", value)

const resultStatuses: ReadonlySet<string> = new Set(ResultStatus.literals)

export const parseStatusFilter = (value: Param) =>
  Either.flatMap(single("status", value), (text) =>
    text === undefined || resultStatuses.has(text)
      ? Either.right(text)
      : Either.left(badRequest(`'status' must be one of ${[...resultStatuses].join(", ")}, got '${text}'`, "status")),
  )

export const parseErrorCodeFilter = (value: Param) =>
  Either.flatMap(single("error_code", value), (text) =>
    text === undefined || /^[a-z0-9_]{1,64}$/.test(text)
      ? Either.right(text)
      : Either.left(badRequest(`'error_code' must be an error code such as timeout, got '${text}'`, "error_code")),
  )

/** `as_of`: a Unix time in whole seconds, no later than a year 9999 could write. */
export const parseAsOf = (value: Param) =>
  Effect.flatMap(single("as_of", value), (text) =>
    text === undefined || /^[0-9]{1,12}$/.test(text)
      ? Effect.succeed(text === undefined ? undefined : Number(text))
      : Effect.fail(badRequest(`'as_of' must be a Unix time in whole seconds, such as 1767225600, got '${text}'`, "as_of")),
  )
