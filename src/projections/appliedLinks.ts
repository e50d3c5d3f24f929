import { Effect } from "effect"
import { batchSubject } from "../domain/batch/subjects.js"
import { streamSubject } from "../domain/stream/events.js"
import type { EventLogShape, LogMessage, LogUnavailable } from "../eventlog/EventLog.js"

interface Applied {
  readonly seq: number
  readonly link: string
}

/**
 * What the projections applied on each chained subject since the last check, by chain link: a leader cut
 * off from its cluster can hand a consumer a message the majority never stored, which the stream then
 * holds something else in place of. Two checks, neither on the log's path per event: a message whose
 * previous link is not the one applied before it on its subject (`suspect`), and, when asked
 * (`diverged`), the leader's link at the last applied place of every subject touched.
 */
export const makeAppliedLinks = () => {
  let touched = new Map<string, Applied>()
  /** Subjects found apart, kept until the read model is rebuilt (`forget`). */
  const found = new Set<string>()

  const saw = (m: LogMessage) => {
    if (m.link === undefined) return
    const before = touched.get(m.subject)
    if (before !== undefined && m.seq > before.seq && (m.prevLink ?? "") !== before.link) found.add(m.subject)
    touched.set(m.subject, { seq: m.seq, link: m.link })
  }

  // A batch's subjects are purged after its deletion is in the log, and its tombstone written after the
  // purge; a stream has no deletion event, only its tombstone.
  const deleted = (log: EventLogShape, subject: string) => {
    const [root, id = ""] = subject.split(".", 2)
    // A file's subjects are purged after its deletion, and an upload refused or cut short purges its parts
    // leaving nothing at all: a file message gone is no sign of divergence, only one replaced is.
    if (root === "file") return Effect.succeed(true)
    const marks = root === "stream" ? [streamSubject(id, "stream_purged")] : [batchSubject(id, "batch_deleted"), batchSubject(id, "batch_purged")]
    return Effect.map(Effect.forEach(marks, (mark) => log.lastSeqOf(mark)), (seqs) => seqs.some((seq) => seq > 0))
  }

  /**
   * The subjects found apart: those whose last applied message the log no longer holds at its place,
   * with any found before. The subjects checked are forgotten; a check the log cut short keeps them.
   */
  const diverged = (log: EventLogShape): Effect.Effect<ReadonlyArray<string>, LogUnavailable> =>
    Effect.suspend(() => {
      const checking = touched
      touched = new Map()
      return Effect.forEach(
        checking,
        ([subject, applied]) =>
          Effect.gen(function* () {
            const link = yield* log.linkAt(subject, applied.seq)
            if (link === applied.link || (link === undefined && (yield* deleted(log, subject)))) return
            found.add(subject)
          }),
        { concurrency: 8, discard: true },
      ).pipe(
        Effect.tapError(() =>
          Effect.sync(() => {
            for (const [subject, applied] of checking) if (!touched.has(subject)) touched.set(subject, applied)
          }),
        ),
        Effect.map(() => [...found]),
      )
    })

  return {
    saw,
    diverged,
    /** Whether a subject was found apart and the read model not rebuilt since. */
    apart: () => found.size > 0,
    forget: () => {
      touched = new Map()
      found.clear()
    },
  }
}
