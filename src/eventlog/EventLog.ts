import { Context, Data, type Effect, type Stream } from "effect"

export interface AppendInput {
  readonly subject: string
  readonly data: Uint8Array
  /** De-duplication key: a second append with the same id stores nothing and reports the first seq. */
  readonly msgId?: string
  /** Optimistic concurrency: the append fails unless the subject's last seq equals this (0: subject empty). */
  readonly expectLastSubjectSeq?: number
  /** Stored with the message and given back on read; the log adds its own (eventHeaders.ts) to every append. */
  readonly headers?: Readonly<Record<string, string>>
  /**
   * How many events the message holds, for the metrics only: a lane window's row events, 0 for a file's
   * raw part; 1 when absent (every other message is one event, a chunk of input rows included).
   */
  readonly events?: number
}

export interface AppendResult {
  /** Where the message is stored: its last part's seq when it is in parts. */
  readonly seq: number
  readonly duplicate: boolean
  /** Where a message stored in parts begins; absent for a message in one part. */
  readonly firstSeq?: number
}

export interface LogMessage {
  readonly seq: number
  readonly subject: string
  readonly data: Uint8Array
  /** Milliseconds since the epoch at which the log stored the message. */
  readonly time: number
  /**
   * Set while a multi-part message is still being assembled when this one is delivered: a consumer
   * that stops after this message must resume reading at this seq (where that message's first part
   * is), not at seq + 1, and skip what it has already applied.
   */
  readonly resumeSeq?: number
  /** Where a multi-part message's first part is stored (`seq` is its last part's); absent for one part. */
  readonly firstSeq?: number
  /** The message's own headers (CloudEvents attributes, its chain link), without the log's `Nats-` ones or `Sluice-Chunk`. */
  readonly headers?: Readonly<Record<string, string>>
  /**
   * Its chain link and the previous one on its subject (`Sluice-Sha256`, `Sluice-Prev-Sha256`), given
   * by an adapter that has them at hand even when the message is read without its headers: a reader
   * can tell that what it applied is what the log holds (the projections, on NATS).
   */
  readonly link?: string
  readonly prevLink?: string
}

export interface ReadOptions {
  /**
   * Messages on subjects this filter matches may come with empty data: for a reader that skips them
   * unread, so an adapter that can leave their bytes where they are (the embedded log, for the large
   * ones) does.
   */
  readonly withoutDataOn?: string
  /**
   * Messages come without their headers: for a reader of payloads alone, so that an adapter need not
   * decode any but a part's (the log joins a message stored in parts by them).
   */
  readonly withoutHeaders?: boolean
  /**
   * Told when a `follow` goes on with a new consumer (a stalled one replaced, a reconnect): what the old
   * one delivered may have come from a node the stream has moved on from.
   */
  readonly onResume?: () => void
  /**
   * How many messages an adapter that pulls (NATS) asks for at a time, for a reader of large messages
   * (a file's 256 KiB parts) that would rather hold a few than the default's many; others ignore it.
   */
  readonly pullMessages?: number
}

export class WrongLastSequence extends Data.TaggedError("WrongLastSequence")<{
  readonly subject: string
  readonly expected: number
}> {}

export class LogUnavailable extends Data.TaggedError("LogUnavailable")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/**
 * The log was asked to store the append but did not say whether it did (its acknowledgement timed out,
 * or the connection went with it): a leader cut off from its cluster may hold it while the majority
 * stores something else at its place. Neither "stored" nor "not stored": whoever appended it learns
 * which from the stream's leader (sending the same messages again, which their ids and expected
 * sequences make safe) before deciding anything on what it would have changed.
 */
export class AppendOutcomeUnknown extends LogUnavailable {}

export const isOutcomeUnknown = (e: unknown): e is AppendOutcomeUnknown => e instanceof AppendOutcomeUnknown

export interface EventLogShape {
  /** The largest `data` a single stored message may hold; larger appends are chunked transparently. */
  readonly maxPayload: number
  /**
   * Appends in order, pipelined: every message is in flight at once within a bounded window.
   * Results are in input order. Not atomic across messages. Once it has succeeded, nothing holds the
   * messages' `data` any more: the caller may write over those buffers.
   */
  readonly append: (
    messages: ReadonlyArray<AppendInput>,
  ) => Effect.Effect<ReadonlyArray<AppendResult>, WrongLastSequence | LogUnavailable>
  /** Messages matching `filter` (NATS wildcards) with seq >= fromSeq, up to the last seq at call time. */
  readonly read: (filter: string, fromSeq: number, options?: ReadOptions) => Stream.Stream<LogMessage, LogUnavailable>
  /** Like `read`, then keeps following new messages forever, across reconnects. */
  readonly follow: (filter: string, fromSeq: number, options?: ReadOptions) => Stream.Stream<LogMessage, LogUnavailable>
  /**
   * The one message on `subject` stored from `firstSeq` to `seq` (both its own: the same seq unless it
   * is in parts), assembled; undefined once it has been purged. A lookup by position, with no consumer.
   */
  readonly readMessage: (subject: string, firstSeq: number, seq: number) => Effect.Effect<LogMessage | undefined, LogUnavailable>
  readonly lastSeq: Effect.Effect<number, LogUnavailable>
  /**
   * The chain link of the message stored at `seq` on `subject` ("" for one without), or undefined when
   * the log holds no message of `subject` there; on NATS answered by the stream's leader.
   */
  readonly linkAt: (subject: string, seq: number) => Effect.Effect<string | undefined, LogUnavailable>
  /**
   * The seq of the last message stored on exactly `subject` (no wildcards), 0 if none: what an append
   * to it must carry as `expectLastSubjectSeq`. For a message in parts, its last part's seq.
   */
  readonly lastSeqOf: (subject: string) => Effect.Effect<number, LogUnavailable>
  /**
   * The seq of the last message on a subject `filter` matches (0 if none), or a later one: NATS answers
   * it exactly; the embedded log, which no other process writes, with its head.
   */
  readonly lastSeqMatching: (filter: string) => Effect.Effect<number, LogUnavailable>
  /** Fails unless the log would take an append now; stores nothing. */
  readonly probe: Effect.Effect<void, LogUnavailable>
  /** Removes every message whose subject matches `filter`; answers how many stored messages went. */
  readonly purge: (filter: string) => Effect.Effect<number, LogUnavailable>
}

export class EventLog extends Context.Tag("EventLog/EventLog")<EventLog, EventLogShape>() {}
