import { Context, Effect, FiberMap, Layer, Schedule, Stream } from "effect"
import { oneStream, streamSubject } from "../domain/stream/events.js"
import { purgeDueAt, streamTombstone } from "../domain/stream/retention.js"
import { HASH_HEADER } from "../eventlog/eventHeaders.js"
import { EventLog } from "../eventlog/EventLog.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import { type StreamRow, streamReads } from "../projections/streamReads.js"
import { atDeadline } from "./atDeadline.js"

const WHILE_LOG_DOWN = Schedule.exponential("1 second").pipe(Schedule.union(Schedule.spaced("1 minute")))
const encoder = new TextEncoder()

export interface StreamRetentionShape {
  /** Plans the purge of a stream the read model shows archived: the Streams service calls it after an archive. */
  readonly archived: (streamId: string) => Effect.Effect<void>
}

/**
 * An archived stream is kept for the retention period after its archive, then its history is purged
 * and its tombstone (`stream_purged`) written as the one event left on its subjects, as a batch's is
 * after its retention. Timers come from the read model at start and from `archived` after, and run on
 * the actors' clock. A purge a crash cut short leaves the stream archived in the read model, so the
 * next start finishes it.
 */
export class StreamRetention extends Context.Tag("Actors/StreamRetention")<StreamRetention, StreamRetentionShape>() {}

export const layer = (options: { readonly retentionMs: number }) =>
  Layer.scoped(
    StreamRetention,
    Effect.gen(function* () {
      const log = yield* EventLog
      const projector = yield* Projector
      const streams = streamReads(yield* ReadModel)
      const clock = yield* Effect.clock
      const timers = yield* FiberMap.make<string>()

      /** Safe to run again from the start: a tombstone a lost ack hid is purged with the rest and written again. */
      const purge = (streamId: string) =>
        Effect.gen(function* () {
          const stream = streams.one(streamId)
          if (stream === undefined || stream.archived_at === null) return
          const heads: Record<string, string> = {}
          yield* log.read(oneStream(streamId), 1).pipe(
            Stream.runForEach((m) => Effect.sync(() => {
              const link = m.headers?.[HASH_HEADER]
              if (link !== undefined) heads[m.subject] = link
            })),
          )
          yield* log.purge(oneStream(streamId))
          const event = streamTombstone({ ...stream, archived_at: stream.archived_at }, heads, yield* clock.currentTimeMillis)
          const seq = yield* log
            .append([{ subject: streamSubject(streamId, "stream_purged"), data: encoder.encode(JSON.stringify(event)), expectLastSubjectSeq: 0 }])
            .pipe(
              Effect.map((written) => Math.max(0, ...written.map((w) => w.seq))),
              Effect.catchTag("WrongLastSequence", () => log.lastSeq),
            )
          yield* projector.awaitSeq(seq)
        }).pipe(
          Effect.retry({ schedule: WHILE_LOG_DOWN, while: (e) => e._tag === "LogUnavailable" }),
          Effect.catchAllCause((cause) => Effect.logError(`stream ${streamId} could not be purged after retention`, cause)),
        )

      /** An archive is final, so a planned purge is left as it is. */
      const plan = (stream: StreamRow) => {
        const due = purgeDueAt(stream, options.retentionMs)
        return due === undefined ? Effect.void : Effect.asVoid(FiberMap.run(timers, stream.id, atDeadline(clock, due, purge(stream.id)), { onlyIfMissing: true }))
      }

      for (const stream of streams.archived()) yield* plan(stream)
      return {
        archived: (streamId) => Effect.suspend(() => {
          const stream = streams.one(streamId)
          return stream === undefined ? Effect.void : plan(stream)
        }),
      }
    }),
  )
