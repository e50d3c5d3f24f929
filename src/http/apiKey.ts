type Headers = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

const bearer = /^Bearer\s+(.+)$/i

const one = (value: string | ReadonlyArray<string> | undefined) => (typeof value === "string" ? value : undefined)

/** The token of an `Authorization: Bearer` header, if the request sent one. */
export const bearerOf = (headers: Headers) => bearer.exec(one(headers["authorization"]) ?? "")?.[1]?.trim()

/** The caller's key, from `Authorization: Bearer` or `X-API-Key`; undefined when neither holds one. */
export const apiKeyOf = (headers: Headers) => {
  const key = (one(headers["authorization"]) === undefined ? undefined : bearerOf(headers)) ?? one(headers["x-api-key"])?.trim()
  return key === "" ? undefined : key
}
