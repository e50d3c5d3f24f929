/** A parsed JSON object: not null, not an array. */
export type JsonObject = Record<string, unknown>

export const isObject = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)
