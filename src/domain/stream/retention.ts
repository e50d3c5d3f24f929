import type { StreamEvent } from "./events.js"

export interface StreamStandingForRetention {
  readonly id: string
  readonly account_id: string
  readonly status: "open" | "cancelled" | "archived"
  readonly created_at: number
  readonly archived_at: number | null
}

/** When a stream's history is purged: `retentionMs` after it was archived. A stream never archived is kept. */
export const purgeDueAt = (stream: StreamStandingForRetention, retentionMs: number): number | undefined =>
  stream.status === "archived" && stream.archived_at !== null ? stream.archived_at + retentionMs : undefined

/** The tombstone an archived stream leaves once its history is purged; `heads` are the purged subjects' last links. */
export const streamTombstone = (
  stream: StreamStandingForRetention & { readonly archived_at: number },
  heads: Readonly<Record<string, string>>,
  at: number,
): StreamEvent => ({
  type: "stream_purged",
  stream_id: stream.id,
  account_id: stream.account_id,
  at,
  created_at: stream.created_at,
  archived_at: stream.archived_at,
  ...(Object.keys(heads).length === 0 ? {} : { chain_heads: { ...heads } }),
})
