import type Database from "better-sqlite3"
import type { RowEvent } from "../domain/batch/events.js"
import type { RowEffect } from "../domain/batch/rowEffect.js"
import { completionOf } from "../domain/completion/completion.js"
import type { FeedPosition } from "../domain/completion/feedPosition.js"

// `stream_id` and `response_id` are null for batch rows; responses and stream items are another source of the same rows.
export const completionTables = `
CREATE TABLE IF NOT EXISTS completion_events (
  seq INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  account_id TEXT NOT NULL,
  stream_id TEXT,
  batch_id TEXT NOT NULL,
  row_index INTEGER NOT NULL,
  response_id TEXT,
  custom_id TEXT,
  status TEXT NOT NULL,
  error TEXT,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  total_tokens INTEGER,
  completed_at INTEGER NOT NULL,
  PRIMARY KEY (seq, idx)
);
CREATE INDEX IF NOT EXISTS completion_events_feed ON completion_events (account_id, stream_id, seq, idx);
CREATE INDEX IF NOT EXISTS completion_events_by_batch ON completion_events (batch_id);
`

/**
 * The completion-events feed: one row per settled attempt (completion.ts), keyed by its place in the
 * log, so the feed's order and cursors are the log's on every instance and after any rebuild. A deleted
 * batch's events leave with its results.
 */
export const completionsProjection = (db: Database.Database) => {
  const s = {
    // A batch row's: its account and custom_id as the batch and the row stood when it settled (the results projection's).
    batchRow: db.prepare(
      `INSERT OR IGNORE INTO completion_events
         (seq, idx, account_id, stream_id, batch_id, row_index, response_id, custom_id, status, error, prompt_tokens, completion_tokens, total_tokens, completed_at)
       VALUES (?, ?, ?, NULL, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    // A response's: in its stream's feed, or outside streams if it ran in the background; a flex request's is its caller's answer alone.
    responseRow: db.prepare(
      `INSERT OR IGNORE INTO completion_events
         (seq, idx, account_id, stream_id, batch_id, row_index, response_id, custom_id, status, error, prompt_tokens, completion_tokens, total_tokens, completed_at)
       SELECT @seq, @idx, q.account_id, q.stream_id, q.id, 0, q.id, q.custom_id, @status, @error, @prompt, @completion, @total, @at
       FROM responses q WHERE q.id = @batch_id AND (q.stream_id IS NOT NULL OR q.background = 1)
       RETURNING account_id`,
    ),
    forget: db.prepare(`DELETE FROM completion_events WHERE batch_id = ?`),
  }
  /**
   * A row event that changed its row by `effect`: its completion event, if it settled the row; answers
   * whose feed it joined. A batch row's event names the batch's account and the row's custom_id as they
   * stood when it settled (what the batches and results projections hold in the same transaction); a
   * response's are read from the response.
   */
  const rowSettled = (event: RowEvent, effect: RowEffect, at: FeedPosition, ofResponse: boolean, accountId: string, customId: string | null): string | undefined => {
    const completion = completionOf(event, effect)
    if (completion === undefined) return undefined
    const error = completion.error === null ? null : JSON.stringify(completion.error)
    if (!ofResponse) {
      const { status, promptTokens, completionTokens, totalTokens } = completion
      const inserted = s.batchRow.run(at.seq, at.idx, accountId, event.batch_id, event.row, customId, status, error, promptTokens, completionTokens, totalTokens, completion.at)
      return inserted.changes > 0 ? accountId : undefined
    }
    const inserted = s.responseRow.get({
      seq: at.seq,
      idx: at.idx,
      batch_id: event.batch_id,
      row: event.row,
      status: completion.status,
      error,
      prompt: completion.promptTokens,
      completion: completion.completionTokens,
      total: completion.totalTokens,
      at: completion.at,
    }) as { account_id: string } | undefined
    return inserted?.account_id
  }
  /** A batch lifecycle event: a deleted or purged batch's events leave the feed. */
  const batchEvent = (event: { readonly type: string; readonly batch_id: string }) => {
    if (event.type === "batch_deleted" || event.type === "batch_purged") s.forget.run(event.batch_id)
  }
  return { rowSettled, batchEvent }
}
