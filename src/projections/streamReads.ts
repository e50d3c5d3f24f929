import type Database from "better-sqlite3"
import type { Priority } from "../domain/scheduling/priority.js"
import type { BatchRow } from "./batchReads.js"

export interface StreamRow {
  readonly id: string
  readonly account_id: string
  readonly key_id: string
  readonly seq: number
  readonly name: string
  readonly window: string
  readonly status: "open" | "cancelled" | "archived"
  readonly created_at: number
  readonly updated_at: number
  readonly cancelled_at: number | null
  readonly archived_at: number | null
  /** Null for standard. */
  readonly priority: Priority | null
}

/** What a purged stream leaves. Times are Unix milliseconds. */
export interface StreamTombstone {
  readonly id: string
  readonly account_id: string
  readonly created_at: number
  readonly archived_at: number
  readonly purged_at: number
}

export interface StreamCounts {
  readonly total: number
  readonly pending: number
  readonly running: number
  readonly completed: number
  readonly failed: number
  readonly cancelled: number
  readonly input_tokens: number
  readonly output_tokens: number
  readonly total_tokens: number
  /** Unix seconds of the last item that completed. */
  readonly last_completed_at: number | null
}

/**
 * A stream's items by the status each reads (standing.ts): its row's status in the results (expired
 * counts as failed), except that an item cancelled while its call ran reads, and counts, as cancelled.
 */
/** A stream's oldest item waiting to start: its one-row batch, and the stream it is of. */
export interface WaitingItem extends BatchRow {
  readonly item_of: string
}

const waitingItemsOf = `FROM responses r JOIN batches b ON b.id = r.id JOIN results x ON x.batch_id = r.id AND x.idx = 0
  WHERE b.status IN ('validating', 'in_progress') AND b.closing IS NULL AND x.status = 'queued'`

const countsSql = `SELECT count(*) AS total,
  coalesce(sum(x.status = 'queued'), 0) AS pending,
  coalesce(sum(x.status = 'running'), 0) AS running,
  coalesce(sum(x.status = 'completed' AND b.status <> 'cancelled'), 0) AS completed,
  coalesce(sum(x.status IN ('failed', 'expired') AND b.status <> 'cancelled'), 0) AS failed,
  coalesce(sum(x.status = 'cancelled' OR b.status = 'cancelled'), 0) AS cancelled,
  coalesce(sum(b.input_tokens), 0) AS input_tokens,
  coalesce(sum(b.output_tokens), 0) AS output_tokens,
  coalesce(sum(b.total_tokens), 0) AS total_tokens,
  max(CASE WHEN x.status = 'completed' THEN b.completed_at END) AS last_completed_at
  FROM responses r JOIN batches b ON b.id = r.id JOIN results x ON x.batch_id = r.id AND x.idx = 0
  WHERE r.stream_id = ?`

export const streamReads = (db: Database.Database) => {
  const s = {
    one: db.prepare<[string], StreamRow>(`SELECT * FROM streams WHERE id = ?`),
    archived: db.prepare<[], StreamRow>(`SELECT * FROM streams WHERE status = 'archived'`),
    tombstone: db.prepare<[string], StreamTombstone>(`SELECT * FROM stream_tombstones WHERE id = ?`),
    ofAccount: db.prepare<[string], StreamRow>(`SELECT * FROM streams WHERE account_id = ? ORDER BY seq DESC`),
    counts: db.prepare<[string], StreamCounts>(countsSql),
    latest: db.prepare<[string], { seq: number; idx: number }>(
      `SELECT seq, idx FROM completion_events WHERE stream_id = ? ORDER BY seq DESC, idx DESC LIMIT 1`,
    ),
    unfinishedItems: db
      .prepare<[string], string>(
        `SELECT r.id FROM responses r JOIN batches b ON b.id = r.id JOIN results x ON x.batch_id = r.id AND x.idx = 0
         WHERE r.stream_id = ? AND b.status IN ('validating', 'in_progress') AND b.closing IS NULL AND x.status = 'queued'`,
      )
      .pluck(),
    oldestWaiting: db.prepare<[string], string>(`SELECT r.id ${waitingItemsOf} AND r.stream_id = ? ORDER BY r.seq LIMIT 1`).pluck(),
    // From the unfinished batches (the CROSS JOINs keep SQLite to that order), not from every item the
    // account's streams ever had; SQLite takes the other columns from the row of the group's min(r.seq).
    oldestWaitingOfAccount: db.prepare<[string], WaitingItem>(
      `SELECT b.*, r.stream_id AS item_of, min(r.seq) AS item_seq
       FROM batches b CROSS JOIN responses r ON r.id = b.id CROSS JOIN results x ON x.batch_id = b.id AND x.idx = 0
       WHERE b.status IN ('validating', 'in_progress') AND b.closing IS NULL AND x.status = 'queued'
         AND r.account_id = ? AND r.stream_id IS NOT NULL
       GROUP BY r.stream_id`,
    ),
    closedWithItems: db
      .prepare<[], string>(
        `SELECT DISTINCT s.id FROM streams s JOIN responses r ON r.stream_id = s.id JOIN batches b ON b.id = r.id
         JOIN results x ON x.batch_id = r.id AND x.idx = 0
         WHERE s.status <> 'open' AND b.status IN ('validating', 'in_progress') AND b.closing IS NULL AND x.status = 'queued'`,
      )
      .pluck(),
  }
  return {
    /** Another account's stream reads exactly like one that does not exist. */
    ofAccount: (accountId: string, id: string): StreamRow | undefined => {
      const row = s.one.get(id)
      return row !== undefined && row.account_id === accountId ? row : undefined
    },
    list: (accountId: string) => s.ofAccount.all(accountId),
    one: (id: string) => s.one.get(id),
    /** Archived streams not purged yet: each is purged once its retention has run. */
    archived: () => s.archived.all(),
    /** Another account's purged stream reads exactly like one that never existed. */
    tombstoneOf: (accountId: string, id: string): StreamTombstone | undefined => {
      const tombstone = s.tombstone.get(id)
      return tombstone !== undefined && tombstone.account_id === accountId ? tombstone : undefined
    },
    counts: (id: string) => s.counts.get(id)!,
    /** The stream's newest completion event's place in the feed, if it has one. */
    latestCompletion: (id: string) => s.latest.get(id),
    /** The items waiting to start: what cancelling the stream cancels (the running ones finish as they end). */
    unfinishedItems: (id: string) => s.unfinishedItems.all(id),
    /** The stream's oldest item waiting to start (queued, or asleep until its retry), if any. */
    oldestWaitingItem: (id: string): string | undefined => s.oldestWaiting.get(id),
    /** The oldest item waiting to start of each of the account's streams that has one, in one query. */
    oldestWaitingItems: (accountId: string) => s.oldestWaitingOfAccount.all(accountId),
    /** Cancelled or archived streams that still have items to cancel (a cancel cut short by a crash). */
    closedWithItems: () => s.closedWithItems.all(),
  }
}
export type StreamReads = ReturnType<typeof streamReads>
