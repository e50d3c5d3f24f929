import type Database from "better-sqlite3"

export interface FileRow {
  readonly id: string
  readonly account_id: string
  readonly key_id: string
  readonly seq: number
  readonly filename: string
  readonly purpose: "batch"
  readonly bytes: number
  readonly lines: number
  /** Unix ms, as are the other times. */
  readonly created_at: number
  readonly expires_at: number | null
  readonly first_seq: number
  readonly last_seq: number
  readonly parts: number
  readonly status: "processed" | "deleted"
  readonly deleted_at: number | null
  readonly reason: "deleted" | "expired" | null
}

/** What a purged file leaves. */
export interface FileTombstone {
  readonly id: string
  readonly account_id: string
  readonly created_at: number
  readonly deleted_at: number
  readonly purged_at: number
  readonly reason: "deleted" | "expired"
}

/** Parts of an upload no `file_created` names. */
export interface FileUpload {
  readonly id: string
  readonly first_seq: number
  readonly last_seq: number
  readonly last_at: number
}

export interface FilePageQuery {
  readonly accountId: string
  readonly purpose: string | undefined
  readonly order: "asc" | "desc"
  /** The page starts after this file (in `order`). */
  readonly afterSeq: number | undefined
  readonly limit: number
}

export const fileReads = (db: Database.Database) => {
  const s = {
    one: db.prepare<[string], FileRow>(`SELECT * FROM files WHERE id = ?`),
    tombstone: db.prepare<[string], FileTombstone>(`SELECT * FROM file_tombstones WHERE id = ?`),
    live: db.prepare<[], FileRow>(`SELECT * FROM files WHERE status = 'processed' AND expires_at IS NOT NULL`),
    deleted: db.prepare<[], FileRow>(`SELECT * FROM files WHERE status = 'deleted'`),
    uploadsBefore: db.prepare<[number], FileUpload>(`SELECT * FROM file_uploads WHERE last_at < ? ORDER BY last_at`),
    upload: db.prepare<[string], FileUpload>(`SELECT * FROM file_uploads WHERE id = ?`),
  }
  const pages = {
    desc: db.prepare(
      `SELECT * FROM files WHERE account_id = @accountId AND status = 'processed' AND (@purpose IS NULL OR purpose = @purpose)
       AND seq < coalesce(@afterSeq, 9007199254740991) ORDER BY seq DESC LIMIT @limit`,
    ),
    asc: db.prepare(
      `SELECT * FROM files WHERE account_id = @accountId AND status = 'processed' AND (@purpose IS NULL OR purpose = @purpose)
       AND seq > coalesce(@afterSeq, 0) ORDER BY seq ASC LIMIT @limit`,
    ),
  }
  return {
    one: (id: string) => s.one.get(id),
    /** Another account's file reads exactly like one that does not exist. */
    ofAccount: (accountId: string, id: string): FileRow | undefined => {
      const row = s.one.get(id)
      return row !== undefined && row.account_id === accountId ? row : undefined
    },
    /** Another account's purged file reads exactly like one that never existed. */
    tombstoneOf: (accountId: string, id: string): FileTombstone | undefined => {
      const tombstone = s.tombstone.get(id)
      return tombstone !== undefined && tombstone.account_id === accountId ? tombstone : undefined
    },
    /** One more than `limit` when there are: the caller tells `has_more` by it. */
    page: (q: FilePageQuery): Array<FileRow> =>
      pages[q.order].all({ accountId: q.accountId, purpose: q.purpose ?? null, afterSeq: q.afterSeq ?? null, limit: q.limit + 1 }) as Array<FileRow>,
    /** Files retention will purge. */
    expiring: () => s.live.all(),
    /** Files deleted whose purge is still owed (a crash, or the log away, cut it short). */
    deletedUnpurged: () => s.deleted.all(),
    /** Parts of uploads no `file_created` named, silent since before `ms` (log time). */
    uploadsSilentSince: (ms: number) => s.uploadsBefore.all(ms),
    /** Every upload whose parts no `file_created` names yet. */
    uploads: () => s.uploadsBefore.all(Number.MAX_SAFE_INTEGER),
    upload: (id: string) => s.upload.get(id),
  }
}
export type FileReads = ReturnType<typeof fileReads>
