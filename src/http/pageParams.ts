import { Effect } from "effect"
import { badRequest } from "./errors.js"

type Param = string | ReadonlyArray<string> | undefined

const single = (name: string, value: Param) =>
  typeof value === "string" || value === undefined
    ? Effect.succeed(value)
    : Effect.fail(badRequest(`'${name}' may be given only once`, name))

export const parseLimit = (value: Param, max: number, fallback: number) =>
  Effect.flatMap(single("limit", value), (text) => {
    if (text === undefined) return Effect.succeed(fallback)
    const n = /^[0-9]{1,7}$/.test(text) ? Number(text) : Number.NaN
    return n >= 1 && n <= max
      ? Effect.succeed(n)
      : Effect.fail(badRequest(`'limit' must be a whole number from 1 to ${max}, got '${text}'`, "limit"))
  })

export const parseAfter = (value: Param) => single("after", value)
