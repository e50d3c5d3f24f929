import Database from "better-sqlite3"
import { Chunk, Deferred, Effect, Exit, FiberId, Layer, Option, Stream } from "effect"
import {
  CHUNK_HEADER,
  DEFAULT_MAX_PAYLOAD,
  type RawAppend,
  type RawEventLog,
  type RawMessage,
  type RawOutcome,
  withChunking,
} from "./chunking.js"
import { EventLog, LogUnavailable, type ReadOptions, WrongLastSequence } from "./EventLog.js"
import type { StampOptions } from "./eventHeaders.js"
import { likePattern, literalPrefix, matchSubject, prefixUpperBound } from "./subjects.js"
import { checkpointOn, walCheckpoints } from "./walCheckpoints.js"

const PAGE_ROWS = 2_000
const PAGE_BYTES = 8 * 1024 * 1024
const POLL_MS = 250
const CHECKPOINT_EVERY_MS = 1_000
const BUSY_TIMEOUT_MS = 5_000
/** Messages in one part smaller than this keep their data whatever a reader skips: copying costs less than testing. */
const OMIT_FROM_BYTES = 4096

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
    // Checkpoints run off the append path (see `checkpointSoon`): an automatic one would copy a large
    // append into the database file, and sync it, before the appender hears back.
    db.pragma("wal_autocheckpoint = 0")
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
    // better-sqlite3's build caches 16 MB of pages per connection, filled as the log grows past it; the
    // appends touch its tail and a read its range, and the OS caches the file anyway.
    db.pragma("cache_size = -4000")
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
  // A page of messages from @from to @upto; with @skipLike and @skip, the large messages on the subjects
  // that `skip` matches come without their data, which SQLite then never copies out. A blob's length is
  // in its record's header, so most messages, small ones, cost no subject test (a LIKE on every one of
  // a million events slowed a rebuild by a tenth); every part of a message in parts is tested, so none
  // is left half joined. LIKE is a cheap superset of the exact match.
  const page = (where: string, omitting: boolean) =>
    db.prepare<[PageParams], StoredRow>(
      `SELECT seq, subject, headers,
         ${omitting ? `CASE WHEN (length(data) >= ${OMIT_FROM_BYTES} OR instr(headers, '${CHUNK_HEADER}') > 0) AND subject LIKE @skipLike ESCAPE '\\' AND subject_matches(@skip, subject) THEN x'' ELSE data END AS data` : "data"},
         time
       FROM messages WHERE seq >= @from AND seq <= @upto ${where} ORDER BY seq`,
    )
  // ">" matches every subject: no per-row call back into JavaScript.
  const pages = (omitting: boolean) => ({
    every: page("", omitting),
    all: page("AND subject_matches(@filter, subject)", omitting),
    prefix: page("AND subject >= @prefix AND subject < @upper AND subject_matches(@filter, subject)", omitting),
  })
  return {
    insert: db.prepare("INSERT INTO messages (subject, msg_id, headers, data, time) VALUES (?, ?, ?, ?, ?)"),
    byMsgId: db.prepare<[string], number>("SELECT seq FROM messages WHERE msg_id = ?").pluck(),
    lastOnSubject: db.prepare<[string], number>(
      "SELECT seq FROM messages WHERE subject = ? ORDER BY seq DESC LIMIT 1",
    ).pluck(),
    range: db.prepare<[string, number, number], StoredRow>(
      "SELECT seq, subject, headers, data, time FROM messages WHERE subject = ? AND seq >= ? AND seq <= ? ORDER BY seq",
    ),
    lastSeq: db.prepare<[], number>("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").pluck(),
    pages: pages(false),
    pagesOmitting: pages(true),
    purgeAll: db.prepare("DELETE FROM messages WHERE subject_matches(?, subject)"),
    purgePrefix: db.prepare("DELETE FROM messages WHERE subject >= ? AND subject < ? AND subject_matches(?, subject)"),
  }
}

interface Pending {
  readonly messages: ReadonlyArray<RawAppend>
  readonly resume: (outcome: Effect.Effect<ReadonlyArray<RawOutcome>, LogUnavailable>) => void
}

interface PageParams {
  readonly from: number
  readonly upto: number
  readonly filter?: string
  readonly prefix?: string
  readonly upper?: string
  readonly skip?: string
  readonly skipLike?: string
}

interface StoredRow {
  readonly seq: number
  readonly subject: string
  readonly headers: string | null
  readonly data: Buffer
  readonly time: number
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

    // Followers wait on the current deferred; a commit wakes them all, and so does a timer, for appends
    // by another process on the same file, which send no notification. One timer for every follower
    // rather than a timeout raced against each wait: a follower waits after nearly every commit.
    let wake = Deferred.unsafeMake<void>(FiberId.none)
    const wakeFollowers = () => {
      const woken = wake
      wake = Deferred.unsafeMake<void>(FiberId.none)
      Deferred.unsafeDone(woken, Exit.void)
    }
    const poll = setInterval(wakeFollowers, POLL_MS)
    poll.unref()
    yield* Effect.addFinalizer(() => Effect.sync(() => clearInterval(poll)))

    // Group commit: every append made in one turn of the event loop goes into one transaction.
    // Each commit costs far more than an insert, so this is what lets thousands of rows a second land.
    let pending: Array<Pending> = []
    let closed = false

    // What the automatic checkpoint did after every commit that grew the WAL past 1000 pages, done
    // once a second at most, after the appenders and the followers have been answered.
    let checkpointTimer: ReturnType<typeof setTimeout> | undefined
    const checkpointHere = checkpointOn(db)
    const checkpoints = options.path === ":memory:" || options.path === "" ? undefined : walCheckpoints(options.path, BUSY_TIMEOUT_MS, checkpointHere)
    const checkpoint = () => {
      checkpointTimer = undefined
      if (closed) return
      if (checkpoints === undefined) checkpointHere()
      else checkpoints.run()
    }
    const checkpointSoon = () => {
      if (checkpointTimer === undefined && !closed) checkpointTimer = setTimeout(checkpoint, CHECKPOINT_EVERY_MS).unref()
    }
    const flush = () => {
      const batch = pending
      pending = []
      let outcomes: ReadonlyArray<ReadonlyArray<RawOutcome>> | undefined
      let failure: LogUnavailable | undefined
      try {
        outcomes = writeAll(batch)
      } catch (e) {
        failure = unavailable("append failed")(e)
      }
      batch.forEach((p, i) => p.resume(failure === undefined ? Effect.succeed(outcomes![i]!) : Effect.fail(failure)))
      if (failure === undefined) wakeFollowers()
      checkpointSoon()
    }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        if (checkpointTimer !== undefined) clearTimeout(checkpointTimer)
        if (pending.length > 0) flush()
      }).pipe(Effect.zipRight(Effect.promise(async () => checkpoints?.close()))),
    )

    const append = (messages: ReadonlyArray<RawAppend>) =>
      Effect.async<ReadonlyArray<RawOutcome>, LogUnavailable>((resume) => {
        if (messages.length === 0) return resume(Effect.succeed([]))
        if (closed) return resume(Effect.fail(new LogUnavailable({ message: "event log closed" })))
        if (pending.length === 0) setImmediate(flush)
        pending.push({ messages, resume })
      })

    const toMessage = (row: StoredRow, withoutHeaders = false): RawMessage => {
      // A plain Uint8Array view (no copy), like the JetStream adapter returns.
      const data = new Uint8Array(row.data.buffer, row.data.byteOffset, row.data.byteLength)
      const message = { seq: row.seq, subject: row.subject, data, time: row.time }
      // Left undecoded for a reader with no use for them, but a part's: the log joins parts by them.
      if (row.headers === null || (withoutHeaders && !row.headers.includes(CHUNK_HEADER))) return message
      return { ...message, headers: JSON.parse(row.headers) }
    }

    /** One page of matching messages, bounded in rows and in bytes so large messages never pile up in memory. */
    const pageRows = (filter: string, from: number, upto: number, options: ReadOptions): Array<RawMessage> => {
      const prefix = literalPrefix(filter)
      const upper = prefixUpperBound(prefix)
      const skip = options.withoutDataOn
      const statements = skip === undefined ? sql.pages : sql.pagesOmitting
      const params: PageParams = {
        from,
        upto,
        ...(skip === undefined ? {} : { skip, skipLike: likePattern(skip) }),
        ...(filter === ">" ? {} : upper === undefined ? { filter } : { filter, prefix, upper }),
      }
      const rows = (filter === ">" ? statements.every : upper === undefined ? statements.all : statements.prefix).iterate(params)
      const out: Array<RawMessage> = []
      let bytes = 0
      for (const row of rows) {
        out.push(toMessage(row, options.withoutHeaders))
        bytes += row.data.byteLength
        if (out.length >= PAGE_ROWS || bytes >= PAGE_BYTES) break
      }
      return out
    }

    /** Pages of matching messages from `fromSeq`; `upto` undefined means follow forever. */
    const scan = (filter: string, fromSeq: number, upto: number | undefined, options: ReadOptions) =>
      Stream.paginateChunkEffect(Math.max(fromSeq, 1), (from) =>
        Effect.gen(function* () {
          const woken = wake // taken before the query so no commit goes unnoticed
          const page = yield* Effect.try({
            try: () => pageRows(filter, from, upto ?? Number.MAX_SAFE_INTEGER, options),
            catch: unavailable("read failed"),
          })
          const last = page[page.length - 1]
          const next = last === undefined ? from : last.seq + 1
          if (last === undefined) {
            if (upto !== undefined) return [Chunk.empty<RawMessage>(), Option.none<number>()] as const
            yield* Deferred.await(woken)
          }
          return [Chunk.unsafeFromArray(page), Option.some(next)] as const
        }),
      )

    const raw: RawEventLog = {
      maxPayload: options.maxPayload ?? DEFAULT_MAX_PAYLOAD,
      append,
      read: (filter, fromSeq, options = {}) =>
        Stream.unwrap(
          Effect.map(Effect.try({ try: lastSeqNow, catch: unavailable("read failed") }), (upto) =>
            scan(filter, fromSeq, upto, options),
          ),
        ),
      follow: (filter, fromSeq, options = {}) => scan(filter, fromSeq, undefined, options),
      range: (subject, fromSeq, toSeq) =>
        Effect.try({ try: () => sql.range.all(subject, fromSeq, toSeq).map((row) => toMessage(row)), catch: unavailable("read failed") }),
      lastSeq: Effect.try({ try: lastSeqNow, catch: unavailable("lastSeq failed") }),
      lastSeqOf: (subject) =>
        Effect.try({ try: () => sql.lastOnSubject.get(subject) ?? 0, catch: unavailable("lastSeqOf failed") }),
      // Its head: a subject filter on every message would be a scan, and nothing waits on it here.
      lastSeqMatching: () => Effect.try({ try: lastSeqNow, catch: unavailable("lastSeq failed") }),
      // Takes the write lock and lets it go at once, without waiting: another process holding it (a
      // backup, a stuck sqlite3 shell) or a full or read-only disk makes the log unavailable to appends.
      probe: Effect.try({
        try: () => {
          db.pragma("busy_timeout = 0")
          try {
            db.exec("BEGIN IMMEDIATE")
            db.exec("ROLLBACK")
          } finally {
            db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
          }
        },
        catch: unavailable("the event log cannot take appends"),
      }),
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

export const layer = (options: { path: string; maxPayload?: number } & StampOptions): Layer.Layer<EventLog, LogUnavailable> =>
  Layer.scoped(EventLog, Effect.map(makeRaw(options), (raw) => withChunking(raw, options)))
