import { Schema } from "effect"
import { Priority } from "../scheduling/priority.js"

/*
 * A stream's events are a storage format like the batch events: add, never rename. A stream holds no
 * work itself: its items are responses naming it (src/domain/response/queuedResponse.ts). Times are
 * Unix milliseconds.
 */

/** How long an item of the stream may wait to start: past it, it fails as expired. */
export const StreamWindow = Schema.Literal("15m", "1h", "24h")
export type StreamWindow = typeof StreamWindow.Type
export const windowMs: Readonly<Record<StreamWindow, number>> = { "15m": 15 * 60_000, "1h": 3_600_000, "24h": 86_400_000 }

const Ids = { stream_id: Schema.String, account_id: Schema.String, at: Schema.Number }

export const StreamCreated = Schema.Struct({
  type: Schema.Literal("stream_created"),
  ...Ids,
  key_id: Schema.String,
  name: Schema.String,
  window: StreamWindow,
  /** Its items' priority unless an item names its own; absent for `standard` (every stream stored before priorities existed). */
  priority: Schema.optional(Priority),
})
export const StreamRenamed = Schema.Struct({ type: Schema.Literal("stream_renamed"), ...Ids, name: Schema.String })
/** No new items; items not yet started are cancelled, running ones finish. */
export const StreamCancelled = Schema.Struct({ type: Schema.Literal("stream_cancelled"), ...Ids })
/** Closed for good. */
export const StreamArchived = Schema.Struct({ type: Schema.Literal("stream_archived"), ...Ids })
/**
 * The stream's tombstone: written once its history has been purged, the retention period after it was
 * archived, and then the only event on `stream.<id>.>`. `at` is when it was purged; it holds no name.
 * Guarded by an expected subject sequence of 0 but with no message id: a purge does not clear JetStream's
 * de-duplication window, which would drop the tombstone written again after a crash.
 */
export const StreamPurged = Schema.Struct({
  type: Schema.Literal("stream_purged"),
  ...Ids,
  created_at: Schema.Number,
  archived_at: Schema.Number,
  /** Each purged subject's last hash-chain link (its `Sluice-Sha256`), for whoever kept a copy of the history. */
  chain_heads: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
})

export const StreamEvent = Schema.Union(StreamCreated, StreamRenamed, StreamCancelled, StreamArchived, StreamPurged)
export type StreamEvent = typeof StreamEvent.Type
export type StreamEventType = StreamEvent["type"]

/** Happen at most once per stream: the log guards each with an expected subject sequence of 0 (and `stream_purged`, above). */
export const onceOnlyStreamTypes: ReadonlySet<StreamEventType> = new Set(["stream_created", "stream_cancelled", "stream_archived"])

/** The only place stream subjects are built: `stream.<stream_id>.<event type>`. */
export const streamSubject = (streamId: string, type: StreamEventType) => `stream.${streamId}.${type}`
/** One stream's whole history. */
export const oneStream = (streamId: string) => `stream.${streamId}.>`
