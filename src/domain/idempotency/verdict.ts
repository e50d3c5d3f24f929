import type { IdempotencyEvent } from "./events.js"

/** The IETF httpapi draft's window: a key is remembered this long after the create that claimed it. */
export const KEY_RETENTION_MS = 24 * 60 * 60 * 1000
/**
 * A claim whose batch is not stored this long after it was made belongs to a create that died between
 * the two appends: its key is free again. Well above the time a 32 MiB create takes to store.
 */
export const CLAIM_ABANDONED_MS = 5 * 60 * 1000

export type IdempotencyVerdict =
  | { readonly _tag: "Claim" }
  | { readonly _tag: "Replay"; readonly batchId: string }
  | { readonly _tag: "BodyDiffers" }
  | { readonly _tag: "InProgress" }

export interface Sighting {
  /** The key's last record in the log, if any. */
  readonly last: IdempotencyEvent | undefined
  /** Whether the last claim's batch is in the log. */
  readonly batchStored: boolean
  readonly bodySha256: string
  readonly now: number
}

/** What a create carrying a key does, given the key's last record: pure, so every instance decides alike. */
export const idempotencyVerdict = ({ last, batchStored, bodySha256, now }: Sighting): IdempotencyVerdict => {
  if (last === undefined || last.type === "idempotency_key_released") return { _tag: "Claim" }
  if (now - last.at >= KEY_RETENTION_MS) return { _tag: "Claim" }
  if (!batchStored && now - last.at >= CLAIM_ABANDONED_MS) return { _tag: "Claim" }
  if (last.body_sha256 !== bodySha256) return { _tag: "BodyDiffers" }
  return batchStored ? { _tag: "Replay", batchId: last.batch_id } : { _tag: "InProgress" }
}

/**
 * The draft makes the key a Structured Field string; a bare token is accepted too, as most clients
 * send one. Answers the key, or why it is refused.
 */
export const parseIdempotencyKey = (header: string): { readonly key: string } | { readonly refused: string } => {
  const text = header.trim()
  const quoted = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/.exec(text)
  const key = quoted !== null ? quoted[1]!.replace(/\\(["\\])/g, "$1") : text
  if (quoted === null && !/^[\x21-\x7e]*$/.test(text)) return { refused: "must be printable ASCII with no spaces, or a quoted string" }
  if (key.length === 0) return { refused: "must not be empty" }
  if (key.length > 255) return { refused: `must be at most 255 characters, got ${key.length}` }
  return { key }
}
