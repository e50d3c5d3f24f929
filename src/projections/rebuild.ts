import { createHash } from "node:crypto"
import { rmSync } from "node:fs"
import type Database from "better-sqlite3"
import { Chunk, Context, Duration, Effect, Layer, Stream } from "effect"
import type { EventLogShape, LogUnavailable } from "../eventlog/EventLog.js"
import { eventsOnly } from "../domain/batch/subjects.js"
import { makeApplier } from "./Projector.js"
import { ReadModel } from "./ReadModel.js"
import { batchRowCache } from "./batchRowCache.js"

export const DEFAULT_WINDOW = 16_000

export interface Rebuilt {
  /** Log messages read and handed to the projections (foreign ones included, see `skipped`). */
  readonly events: number
  readonly skipped: number
  /** The log's last sequence when the rebuild began: the rebuilt model reflects every message up to it. */
  readonly lastSeq: number
  /** The offset the rebuilt model records: the last message it applied (below lastSeq after a purge of the tail). */
  readonly appliedSeq: number
  readonly ms: number
}

export const removeReadModelFiles = (path: string): void => {
  for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true })
}

/** A fresh read model at `path` with every projection replayed from the start of the log. */
export const rebuildReadModel = (
  log: EventLogShape,
  path: string,
  options: { readonly window?: number; /** Stop at this seq rather than at the log's end. */ readonly upto?: number } = {},
): Effect.Effect<Rebuilt, LogUnavailable> =>
  Effect.gen(function* () {
    yield* Effect.sync(() => removeReadModelFiles(path))
    const context = yield* Layer.build(ReadModel.layer(path))
    const db = Context.get(context, ReadModel)
    // A fresh file nobody reads until the rebuild ends: commits need not reach the disk one by one.
    db.pragma("synchronous = OFF")
    db.pragma("cache_size = -131072")
    yield* Effect.addFinalizer(() => Effect.sync(() => db.pragma("synchronous = NORMAL")))
    const apply = makeApplier(db)
    const end = yield* log.lastSeq
    const lastSeq = options.upto === undefined ? end : Math.min(end, options.upto)
    const totals = { events: 0, skipped: 0, appliedSeq: 0 }
    yield* log.read(">", 1, eventsOnly).pipe(
      Stream.takeWhile((m) => m.seq <= lastSeq),
      Stream.grouped(options.window ?? DEFAULT_WINDOW),
      Stream.runForEach((chunk) =>
        Effect.sync(() => {
          const messages = Chunk.toReadonlyArray(chunk)
          totals.skipped += apply(messages).length
          totals.events += messages.length
          totals.appliedSeq = messages[messages.length - 1]?.seq ?? totals.appliedSeq
        }),
      ),
    )
    return { ...totals, lastSeq }
  }).pipe(
    Effect.scoped,
    Effect.timed,
    Effect.map(([took, rebuilt]) => ({ ...rebuilt, ms: Duration.toMillis(took) })),
  )

// Not `file_uploads`: the parts of an upload refused or cut short are purged from the log, so a replay
// never sees what the live read model remembered of them until it forgets them a day on.
export const contentTables = [
  "batches",
  "results",
  "row_chunks",
  "tombstones",
  "responses",
  "streams",
  "stream_tombstones",
  "files",
  "file_tombstones",
  "accounts",
  "api_keys",
  "usage",
  "completion_events",
] as const
export type ContentTable = (typeof contentTables)[number]

export interface TableDigest {
  readonly rows: number
  readonly sha256: string
}

export interface ReadModelDigest {
  readonly sha256: string
  readonly tables: Readonly<Record<ContentTable, TableDigest>>
}

interface ColumnInfo {
  readonly name: string
  readonly pk: number
}

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`

// JSON would spell a blob as an object of bytes and throw on a bigint; neither column type exists today.
// Money is summed in the order each reader met it: a rebuild after a purge adds a deleted batch's
// spending as one sum where the live model added row by row, which can differ in the last bits.
/** A stored value as the digest writes it; two values the same by it are the same read model content. */
export const canonical = (value: unknown) =>
  Buffer.isBuffer(value)
    ? `x'${value.toString("hex")}'`
    : typeof value === "bigint"
      ? value.toString()
      : typeof value === "number" && !Number.isInteger(value)
        ? Number(value.toPrecision(12))
        : value

const tableDigest = (db: Database.Database, table: ContentTable): TableDigest => {
  const columns = db.prepare(`PRAGMA table_info(${quoted(table)})`).all() as Array<ColumnInfo>
  const key = columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk)
  const order = (key.length > 0 ? key : columns).map((c) => quoted(c.name)).join(", ")
  const hash = createHash("sha256").update(JSON.stringify(columns.map((c) => c.name)))
  let rows = 0
  const select = db.prepare(`SELECT ${columns.map((c) => quoted(c.name)).join(", ")} FROM ${quoted(table)} ORDER BY ${order}`)
  for (const row of select.raw().iterate() as Iterable<Array<unknown>>) {
    hash.update("\n").update(JSON.stringify(row.map(canonical)))
    rows++
  }
  return { rows, sha256: hash.digest("hex") }
}

/** The content of every projection table (not the offsets), ordered by primary key: equal digests, equal read models. */
export const readModelDigest = (db: Database.Database): ReadModelDigest =>
  db.transaction(() => {
    const tables = Object.fromEntries(contentTables.map((t) => [t, tableDigest(db, t)])) as Record<ContentTable, TableDigest>
    const sha256 = createHash("sha256")
      .update(contentTables.map((t) => `${t} ${tables[t].rows} ${tables[t].sha256}`).join("\n"))
      .digest("hex")
    return { sha256, tables }
  })()

export const differingTables = (a: ReadModelDigest, b: ReadModelDigest): ReadonlyArray<ContentTable> =>
  contentTables.filter((t) => a.tables[t].sha256 !== b.tables[t].sha256)

/**
 * Replays the whole log into a read model beside `db`'s file, then replaces `db`'s content (offsets
 * included) with it in one transaction: readers see the old content until it commits. For a read model
 * that applied messages the log no longer holds (appliedLinks.ts); its projector then follows on from
 * the offset the rebuild reached.
 */
export const rebuildInPlace = (db: Database.Database, log: EventLogShape): Effect.Effect<Rebuilt, LogUnavailable> =>
  Effect.gen(function* () {
    const path = `${db.name}.rebuild`
    const rebuilt = yield* rebuildReadModel(log, path)
    yield* Effect.sync(() => {
      db.prepare(`ATTACH DATABASE ? AS rebuilt`).run(path)
      try {
        const tables = db
          .prepare(`SELECT name FROM rebuilt.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
          .pluck()
          .all() as Array<string>
        db.transaction(() => {
          for (const table of tables) {
            const columns = (db.prepare(`PRAGMA main.table_info(${quoted(table)})`).all() as Array<ColumnInfo>).map((c) => quoted(c.name)).join(", ")
            db.exec(`DELETE FROM main.${quoted(table)}`)
            db.exec(`INSERT INTO main.${quoted(table)} (${columns}) SELECT ${columns} FROM rebuilt.${quoted(table)}`)
          }
          batchRowCache(db).forgetAll()
        })()
      } finally {
        db.exec(`DETACH DATABASE rebuilt`)
        removeReadModelFiles(path)
      }
    })
    return rebuilt
  })
