import type Database from "better-sqlite3"
import type { CompletionEvent } from "../domain/api/CompletionEvent.js"
import { type FeedPosition, formatCompletionId } from "../domain/completion/feedPosition.js"
import { isObject } from "../domain/json.js"
import { resultId } from "./resultReads.js"

/** Where a page of the feed starts: after a position (oldest first), before one, or at the newest (both newest first). */
export type FeedFrom =
  | { readonly kind: "after"; readonly at: FeedPosition }
  | { readonly kind: "before"; readonly at: FeedPosition }
  | { readonly kind: "newest" }

export interface FeedPage {
  readonly data: ReadonlyArray<CompletionEvent>
  /** More events lie beyond the page's last, in its direction. */
  readonly hasMore: boolean
}

interface Row {
  readonly seq: number
  readonly idx: number
  readonly batch_id: string
  readonly row_index: number
  readonly response_id: string | null
  readonly custom_id: string | null
  readonly status: CompletionEvent["status"]
  readonly error: string | null
  readonly prompt_tokens: number | null
  readonly completion_tokens: number | null
  readonly total_tokens: number | null
  readonly completed_at: number
  readonly response: string | null
}

const resultOf = (row: Row): CompletionEvent["result"] => {
  if (row.status !== "completed" || row.response === null) return null
  const body = (JSON.parse(row.response) as { body?: unknown }).body
  return isObject(body) ? body : null
}

const toEvent = (row: Row): CompletionEvent => ({
  completion_id: formatCompletionId(row),
  response_id: row.response_id,
  custom_id: row.custom_id,
  status: row.status,
  result: resultOf(row),
  error: row.error === null ? null : JSON.parse(row.error),
  prompt_tokens: row.prompt_tokens,
  completion_tokens: row.completion_tokens,
  total_tokens: row.total_tokens,
  completed_at: new Date(row.completed_at).toISOString(),
  batch_id: row.response_id === null ? row.batch_id : null,
  result_id: row.response_id === null ? resultId(row.row_index) : null,
})

/** Pages of an account's feed, outside streams (`streamId` null) or in one; a completed row's result is its result line's. */
export const completionReads = (db: Database.Database) => {
  const select = `SELECT e.seq, e.idx, e.batch_id, e.row_index, e.response_id, e.custom_id, e.status, e.error,
      e.prompt_tokens, e.completion_tokens, e.total_tokens, e.completed_at, r.response
    FROM completion_events e LEFT JOIN results r ON r.batch_id = e.batch_id AND r.idx = e.row_index
    WHERE e.account_id = @account AND e.stream_id IS @stream`
  const s = {
    after: db.prepare(`${select} AND (e.seq, e.idx) > (@seq, @idx) ORDER BY e.seq, e.idx LIMIT @n`),
    before: db.prepare(`${select} AND (e.seq, e.idx) < (@seq, @idx) ORDER BY e.seq DESC, e.idx DESC LIMIT @n`),
    newest: db.prepare(`${select} ORDER BY e.seq DESC, e.idx DESC LIMIT @n`),
  }
  const page = (accountId: string, streamId: string | null, from: FeedFrom, limit: number): FeedPage => {
    const params = { account: accountId, stream: streamId, n: limit + 1, ...(from.kind === "newest" ? {} : from.at) }
    const rows = s[from.kind].all(params) as Array<Row>
    return { data: rows.slice(0, limit).map(toEvent), hasMore: rows.length > limit }
  }
  return { page }
}

export type CompletionReads = ReturnType<typeof completionReads>
