import { Schema } from "effect"

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
})
export const StreamRenamed = Schema.Struct({ type: Schema.Literal("stream_renamed"), ...Ids, name: Schema.String })
/** No new items; items not yet started are cancelled, running ones finish. */
export const StreamCancelled = Schema.Struct({ type: Schema.Literal("stream_cancelled"), ...Ids })
/** Closed for good. */
export const StreamArchived = Schema.Struct({ type: Schema.Literal("stream_archived"), ...Ids })

export const StreamEvent = Schema.Union(StreamCreated, StreamRenamed, StreamCancelled, StreamArchived)
export type StreamEvent = typeof StreamEvent.Type
export type StreamEventType = StreamEvent["type"]

/** Happen at most once per stream: the log guards each with an expected subject sequence of 0. */
export const onceOnlyStreamTypes: ReadonlySet<StreamEventType> = new Set(["stream_created", "stream_cancelled", "stream_archived"])

/** The only place stream subjects are built: `stream.<stream_id>.<event type>`. */
export const streamSubject = (streamId: string, type: StreamEventType) => `stream.${streamId}.${type}`
