import Database from "better-sqlite3"
import { Chunk, Deferred, Duration, Effect, Exit, Layer, Option, Queue, Ref, Stream } from "effect"
import {
  DEFAULT_MAX_PAYLOAD,
  type RawAppend,
  type RawEventLog,
  type RawMessage,
  type RawOutcome,
  withChunking,
} from "./chunking.js"
import { EventLog, LogUnavailable, WrongLastSequence } from "./EventLog.js"
import { literalPrefix, matchSubject, prefixUpperBound } from "./subjects.js"

const PAGE_ROWS = 2_000
const POLL = Duration.millis(250)

// AUTOINCREMENT: a seq is never reused, even after the newest messages are purged.
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    subject TEXT NOT NULL,
    msg_id TEXT UNIQUE,
    headers TEXT,
    data BLOB NOT NULL,
    time INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS messages_subject_seq ON messages (subject, seq);
`

const unavailable = (message: string) => (cause: unknown) =>
  new LogUnavailable({ message: `${message}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })

const open = (path: string) => {
  const db = new Database(path)
  try {
    db.pragma("journal_mode = WAL")
    db.pragma("synchronous = NORMAL")
    db.pragma("busy_timeout = 5000")
    db.exec(SCHEMA)
    db.function("subject_matches", { deterministic: true }, (filter, subject) =>
      matchSubject(String(filter), String(subject)) ? 1 : 0,
    )
    return db
  } catch (e) {
    db.close()
    throw e
  }
}

const statements = (db: Database.Database) => {
  // Only seqs are paged (cheap), rows are fetched one at a time, so a page of large messages
  // never sits in memory at once.
  const page = (bounded: boolean) =>
    db
      .prepare<unknown[], number>(
        `SELECT seq FROM messages WHERE seq >= ? AND seq <= ?
         ${bounded ? "AND subject >= ? AND subject < ?" : ""}
         AND subject_matches(?, subject) ORDER BY seq LIMIT ${PAGE_ROWS}`,
      )
      .pluck()
  return {
    insert: db.prepare("INSERT INTO messages (subject, msg_id, headers, data, time) VALUES (?, ?, ?, ?, ?)"),
    byMsgId: db.prepare<[string], number>("SELECT seq FROM messages WHERE msg_id = ?").pluck(),
    lastOnSubject: db.prepare<[string], number>(
      "SELECT seq FROM messages WHERE subject = ? ORDER BY seq DESC LIMIT 1",
    ).pluck(),
    lastSeq: db.prepare<[], number>("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").pluck(),
    row: db.prepare<[number], { subject: string; headers: string | null; data: Buffer; time: number }>(
      "SELECT subject, headers, data, time FROM messages WHERE seq = ?",
    ),
    pageAll: page(false),
    pagePrefix: page(true),
    purgeAll: db.prepare("DELETE FROM messages WHERE subject_matches(?, subject)"),
    purgePrefix: db.prepare("DELETE FROM messages WHERE subject >= ? AND subject < ? AND subject_matches(?, subject)"),
  }
}

interface Pending {
  readonly messages: ReadonlyArray<RawAppend>
  readonly done: Deferred.Deferred<ReadonlyArray<RawOutcome>, LogUnavailable>
}

/** The adapter without chunking: exported so tests can inspect and write stored parts. */
export const makeRaw = (options: { path: string; maxPayload?: number }) =>
  Effect.gen(function* () {
    const db = yield* Effect.acquireRelease(
      Effect.try({ try: () => open(options.path), catch: unavailable(`cannot open event log at ${options.path}`) }),
      (db) => Effect.sync(() => db.close()),
    )
    const sql = statements(db)
    const lastSeqNow = () => sql.lastSeq.get() ?? 0

    const appendOne = (m: RawAppend, time: number): RawOutcome => {
      if (m.msgId !== undefined) {
        const seq = sql.byMsgId.get(m.msgId)
        if (seq !== undefined) return { seq, duplicate: true }
      }
      if (m.expectLastSubjectSeq !== undefined && (sql.lastOnSubject.get(m.subject) ?? 0) !== m.expectLastSubjectSeq) {
        return new WrongLastSequence({ subject: m.subject, expected: m.expectLastSubjectSeq })
      }
      const headers = m.headers === undefined ? null : JSON.stringify(m.headers)
      const info = sql.insert.run(m.subject, m.msgId ?? null, headers, m.data, time)
      return { seq: Number(info.lastInsertRowid), duplicate: false }
    }
    // IMMEDIATE: take the write lock before reading expectations, in case another process writes.
    const writeAll = db.transaction((batch: ReadonlyArray<Pending>) => {
      const time = Date.now()
      return batch.map((p) => p.messages.map((m) => appendOne(m, time)))
    }).immediate

    const signal = yield* Ref.make(yield* Deferred.make<void>())
    const notifyFollowers = Effect.flatMap(Deferred.make<void>(), (next) =>
      Effect.flatMap(Ref.getAndSet(signal, next), (prev) => Deferred.succeed(prev, undefined)),
    )

    // Group commit: every append queued while the previous transaction ran goes into the next one.
    const queue = yield* Queue.unbounded<Pending>()
    let closed = false
    const closedError = () => new LogUnavailable({ message: "event log closed" })
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        return Effect.flatMap(Queue.takeAll(queue), Effect.forEach((p) => Deferred.fail(p.done, closedError())))
      }),
    )
    // Uninterruptible once taken, so closing the log never strands an appender that was dequeued.
    const commit = (batch: ReadonlyArray<Pending>) =>
      Effect.gen(function* () {
        const exit = yield* Effect.exit(Effect.try({ try: () => writeAll(batch), catch: unavailable("append failed") }))
        yield* Effect.forEach(batch, (p, i) => Deferred.done(p.done, Exit.map(exit, (outcomes) => outcomes[i]!)))
        yield* notifyFollowers
      }).pipe(Effect.uninterruptible)
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.flatMap(Queue.takeBetween(queue, 1, Number.MAX_SAFE_INTEGER), (batch) =>
          commit(Chunk.toReadonlyArray(batch)),
        ),
      ),
    )

    const append = (messages: ReadonlyArray<RawAppend>) =>
      Effect.gen(function* () {
        if (messages.length === 0) return []
        if (closed) return yield* closedError()
        const done = yield* Deferred.make<ReadonlyArray<RawOutcome>, LogUnavailable>()
        yield* Queue.offer(queue, { messages, done })
        return yield* Deferred.await(done)
      })

    const pageSeqs = (filter: string, from: number, upto: number): ReadonlyArray<number> => {
      const prefix = literalPrefix(filter)
      const upper = prefixUpperBound(prefix)
      return upper === undefined
        ? sql.pageAll.all(from, upto, filter)
        : sql.pagePrefix.all(from, upto, prefix, upper, filter)
    }

    const fetchRow = (seq: number): Option.Option<RawMessage> => {
      const row = sql.row.get(seq)
      if (row === undefined) return Option.none() // purged since the page was read
      // A plain Uint8Array view (no copy), like the JetStream adapter returns.
      const data = new Uint8Array(row.data.buffer, row.data.byteOffset, row.data.byteLength)
      const message = { seq, subject: row.subject, data, time: row.time }
      return Option.some(row.headers === null ? message : { ...message, headers: JSON.parse(row.headers) })
    }

    /** Pages of matching seqs from `fromSeq`; `upto` undefined means follow forever. */
    const scan = (filter: string, fromSeq: number, upto: number | undefined) =>
      Stream.paginateChunkEffect(Math.max(fromSeq, 1), (from) =>
        Effect.gen(function* () {
          const wake = yield* Ref.get(signal) // taken before the query so no commit goes unnoticed
          const seqs = yield* Effect.try({
            try: () => pageSeqs(filter, from, upto ?? Number.MAX_SAFE_INTEGER),
            catch: unavailable("read failed"),
          })
          const next = seqs.length > 0 ? seqs[seqs.length - 1]! + 1 : from
          if (seqs.length < PAGE_ROWS) {
            if (upto !== undefined) return [Chunk.unsafeFromArray(seqs), Option.none<number>()] as const
            // Polling too: appends by another process on the same file send no notification.
            if (seqs.length === 0) yield* Effect.timeoutOption(Deferred.await(wake), POLL)
          }
          return [Chunk.unsafeFromArray(seqs), Option.some(next)] as const
        }),
      ).pipe(
        Stream.mapEffect((seq) => Effect.try({ try: () => fetchRow(seq), catch: unavailable("read failed") })),
        Stream.filterMap((row) => row),
      )

    const raw: RawEventLog = {
      maxPayload: options.maxPayload ?? DEFAULT_MAX_PAYLOAD,
      append,
      read: (filter, fromSeq) =>
        Stream.unwrap(
          Effect.map(Effect.try({ try: lastSeqNow, catch: unavailable("read failed") }), (upto) =>
            scan(filter, fromSeq, upto),
          ),
        ),
      follow: (filter, fromSeq) => scan(filter, fromSeq, undefined),
      lastSeq: Effect.try({ try: lastSeqNow, catch: unavailable("lastSeq failed") }),
      purge: (filter) =>
        Effect.try({
          try: () => {
            const prefix = literalPrefix(filter)
            const upper = prefixUpperBound(prefix)
            const info = upper === undefined ? sql.purgeAll.run(filter) : sql.purgePrefix.run(prefix, upper, filter)
            return info.changes
          },
          catch: unavailable("purge failed"),
        }),
    }
    return raw
  })

export const layer = (options: { path: string; maxPayload?: number }): Layer.Layer<EventLog, LogUnavailable> =>
  Layer.scoped(EventLog, Effect.map(makeRaw(options), withChunking))
