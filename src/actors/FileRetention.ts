import { Clock, Context, Effect, FiberMap, FiberSet, Layer, Schedule } from "effect"
import { type DeletionReason, type FileEvent, filePartSubject, fileSubject, oneFile } from "../domain/file/events.js"
import { purgeDueAt } from "../domain/file/retention.js"
import { EventLog, type LogUnavailable } from "../eventlog/EventLog.js"
import { fileReads } from "../projections/fileReads.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import { atDeadline } from "./atDeadline.js"
import { appendSettled } from "./unknownOutcome.js"

const WHILE_LOG_DOWN = Schedule.exponential("1 second").pipe(Schedule.union(Schedule.spaced("1 minute")))
/** Parts no `file_created` has named for this long are an upload a crash cut short: no request lasts an hour. */
export const ABANDONED_UPLOAD_MS = 3_600_000
/**
 * How often the read model is asked for uploads no timer watches yet: on the live clock, since a loop on
 * the actors' clock would run once per period of every jump a test makes (and a TestClock's step is dear).
 */
const LOOK_EVERY = "5 seconds"
const encoder = new TextEncoder()

/** What a deletion did: `deleted` by this call, or `gone` already (deleted by another call or instance, or purged). */
export type Removal = "deleted" | "gone"

export interface FileRetentionShape {
  /** Plans the expiry of a file the read model holds: the upload calls it once the file is readable. */
  readonly planned: (fileId: string) => Effect.Effect<void>
  /**
   * Deletes a file: `file_deleted`, then its history purged and its tombstone written. Of several
   * deletions at once (a DELETE and its expiry, or one on each instance) the log keeps one, and only
   * the one whose event it kept purges.
   */
  readonly remove: (fileId: string, reason: DeletionReason) => Effect.Effect<Removal, LogUnavailable>
}

/**
 * Files' retention and deletion. A file expires at its `expires_at` (planned from the read model at
 * start and by `planned` after) on the actors' clock. A deletion a crash or the log's absence cut short
 * is finished in the background and at the next start; parts of an upload that never wrote its
 * `file_created` (a crash between them) are purged once they have been silent for an hour.
 */
export class FileRetention extends Context.Tag("Actors/FileRetention")<FileRetention, FileRetentionShape>() {}

export const layer = Layer.scoped(
  FileRetention,
  Effect.gen(function* () {
    const log = yield* EventLog
    const projector = yield* Projector
    const files = fileReads(yield* ReadModel)
    const clock = yield* Effect.clock
    const timers = yield* FiberMap.make<string>()
    // Purges finished in the background end with the service, not after it (the log is closed by then).
    const background = yield* FiberSet.make()

    const append = (event: FileEvent) =>
      appendSettled(log, [{ subject: fileSubject(event.file_id, event.type), data: encoder.encode(JSON.stringify(event)), expectLastSubjectSeq: 0 }])

    /** Safe to run again from the start: a tombstone a lost ack hid is purged with the rest and written again. */
    const bury = (fileId: string) =>
      Effect.gen(function* () {
        const file = files.one(fileId)
        if (file === undefined || file.status !== "deleted" || file.deleted_at === null) return
        const heads: Record<string, string> = {}
        for (const subject of [filePartSubject(fileId), fileSubject(fileId, "file_created"), fileSubject(fileId, "file_deleted")]) {
          const seq = yield* log.lastSeqOf(subject)
          const link = seq === 0 ? undefined : yield* log.linkAt(subject, seq)
          if (link !== undefined && link !== "") heads[subject] = link
        }
        yield* log.purge(oneFile(fileId))
        const tombstone: FileEvent = {
          type: "file_purged",
          file_id: fileId,
          account_id: file.account_id,
          at: yield* clock.currentTimeMillis,
          created_at: file.created_at,
          deleted_at: file.deleted_at,
          reason: file.reason ?? "deleted",
          ...(Object.keys(heads).length === 0 ? {} : { chain_heads: heads }),
        }
        const seq = yield* append(tombstone).pipe(
          Effect.map((written) => written[0]!.seq),
          Effect.catchTag("WrongLastSequence", () => log.lastSeq),
        )
        yield* projector.awaitSeq(seq)
      })

    const buryWhileLogDown = (fileId: string) =>
      bury(fileId).pipe(
        Effect.retry({ schedule: WHILE_LOG_DOWN, while: (e) => e._tag === "LogUnavailable" }),
        Effect.catchAllCause((cause) => Effect.logError(`the history of deleted file ${fileId} could not be purged`, cause)),
      )

    /** Whether the event the log holds on `subject` is this very one: another writer's would differ in its time at least. */
    const storedIs = (subject: string, data: Uint8Array) =>
      Effect.flatMap(log.lastSeqOf(subject), (seq) =>
        seq === 0
          ? Effect.succeed(undefined)
          : Effect.map(log.readMessage(subject, seq, seq), (m) => (m !== undefined && Buffer.from(m.data).equals(data) ? seq : undefined)),
      )

    const remove = (fileId: string, reason: DeletionReason) =>
      Effect.gen(function* () {
        const file = files.one(fileId)
        if (file === undefined || file.status !== "processed") return "gone" as const
        // Decided from the log: a file another instance purged may still read as live here.
        if ((yield* log.lastSeqOf(fileSubject(fileId, "file_created"))) === 0) return "gone" as const
        const event: FileEvent = { type: "file_deleted", file_id: fileId, account_id: file.account_id, at: yield* clock.currentTimeMillis, reason }
        const subject = fileSubject(fileId, "file_deleted")
        const data = encoder.encode(JSON.stringify(event))
        const seq = yield* appendSettled(log, [{ subject, data, expectLastSubjectSeq: 0 }]).pipe(
          Effect.map((written): number | undefined => written[0]!.seq),
          // Stored by our own attempt whose answer was lost, or by another deletion, which purges.
          Effect.catchTag("WrongLastSequence", () => storedIs(subject, data)),
        )
        if (seq === undefined) {
          yield* projector.awaitSeq(yield* log.lastSeq)
          return "gone" as const
        }
        yield* projector.awaitSeq(seq)
        if (reason === "deleted") yield* FiberMap.remove(timers, fileId)
        // The file already reads as deleted; a purge the log cannot take now is finished in the background.
        yield* bury(fileId).pipe(
          Effect.catchAll((e) =>
            Effect.zipRight(
              Effect.logWarning(`purging file ${fileId} from the log failed; retrying in the background`, e),
              FiberSet.run(background, buryWhileLogDown(fileId)),
            ),
          ),
        )
        return "deleted" as const
      })

    const expire = (fileId: string) =>
      remove(fileId, "expired").pipe(
        Effect.uninterruptible,
        Effect.retry({ schedule: WHILE_LOG_DOWN, while: (e) => e._tag === "LogUnavailable" }),
        Effect.catchAllCause((cause) => Effect.logError(`file ${fileId} could not be purged after its expiry`, cause)),
      )

    /** A file's expiry never moves, so a planned timer is left as it is. */
    const planned = (fileId: string) =>
      Effect.suspend(() => {
        const file = files.one(fileId)
        const due = file === undefined ? undefined : purgeDueAt(file)
        return due === undefined ? Effect.void : Effect.asVoid(FiberMap.run(timers, fileId, atDeadline(clock, due, expire(fileId)), { onlyIfMissing: true }))
      })

    /**
     * Parts no `file_created` named, silent for an hour of the actors' clock after the log stored the
     * last: purged, unless the log holds the event the read model has not applied yet. Each upload gets
     * a timer at that hour's end; one that went on meanwhile is planned again from its newest part.
     */
    const abandoned = yield* FiberMap.make<string>()
    // Uploads settled here, whose row the read model keeps a while yet: not watched again.
    const settled = new Set<string>()
    const purgeOnceAbandoned = (uploadId: string, lastAt: number): Effect.Effect<void> =>
      Effect.gen(function* () {
        for (let due = lastAt + ABANDONED_UPLOAD_MS; ; ) {
          yield* atDeadline(clock, due, Effect.void)
          const upload = files.upload(uploadId)
          if (upload === undefined) return
          // Parts came after the timer was planned: it waits for an hour after the newest.
          if (upload.last_at + ABANDONED_UPLOAD_MS <= (yield* clock.currentTimeMillis)) break
          due = upload.last_at + ABANDONED_UPLOAD_MS
        }
        if ((yield* log.lastSeqOf(fileSubject(uploadId, "file_created"))) === 0) {
          const purged = yield* log.purge(oneFile(uploadId))
          if (purged > 0) yield* Effect.logWarning(`purged ${purged} parts of file ${uploadId}, an upload that never completed`)
        }
        settled.add(uploadId)
      }).pipe(
        Effect.retry({ schedule: WHILE_LOG_DOWN, while: (e) => e._tag === "LogUnavailable" }),
        Effect.catchAllCause((cause) => Effect.logWarning(`the parts of upload ${uploadId} could not be purged`, cause)),
      )
    const watchUploads = Effect.suspend(() =>
      Effect.forEach(
        files.uploads().filter((u) => !settled.has(u.id)),
        (u) => FiberMap.run(abandoned, u.id, purgeOnceAbandoned(u.id, u.last_at), { onlyIfMissing: true }),
        { discard: true },
      ),
    )

    for (const file of files.expiring()) yield* planned(file.id)
    yield* Effect.gen(function* () {
      yield* projector.awaitSeq(yield* log.lastSeq.pipe(Effect.retry(WHILE_LOG_DOWN)))
      for (const file of files.deletedUnpurged()) yield* buryWhileLogDown(file.id)
    }).pipe(Effect.withClock(clock), Effect.forkScoped)
    // On the live clock, whatever clock the actors were given: a TestClock's adjust would step through every look.
    yield* watchUploads.pipe(Effect.repeat(Schedule.spaced(LOOK_EVERY)), Effect.withClock(Clock.make()), Effect.forkScoped)

    return { planned, remove }
  }),
)
