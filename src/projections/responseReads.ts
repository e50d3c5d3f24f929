import type Database from "better-sqlite3"
import type { Priority } from "../domain/scheduling/priority.js"

/** A response as the read model holds it: its own row, its one-row batch's standing and its row's result. */
export interface StoredResponse {
  readonly id: string
  readonly account_id: string
  readonly seq: number
  readonly model: string
  readonly endpoint: string
  readonly background: number
  readonly service_tier: string
  readonly stream_id: string | null
  readonly custom_id: string | null
  readonly metadata: string | null
  readonly echo: string
  readonly batch_status: string
  /** Its one-row batch's; null for standard. */
  readonly priority: Priority | null
  readonly batch_error: string | null
  readonly created_at: number
  readonly expires_at: number
  readonly completed_at: number | null
  readonly failed_at: number | null
  readonly expired_at: number | null
  readonly cancelled_at: number | null
  readonly row_status: string | null
  readonly row_response: string | null
  readonly row_error: string | null
}

const columns = `r.*, b.status AS batch_status, b.priority, b.error AS batch_error, b.created_at, b.expires_at, b.completed_at, b.failed_at,
  b.expired_at, b.cancelled_at, x.status AS row_status, x.response AS row_response, x.error AS row_error
  FROM responses r JOIN batches b ON b.id = r.id LEFT JOIN results x ON x.batch_id = r.id AND x.idx = 0`

/** The responses a list shows: queued ones (background, a stream's items), not flex requests, which only their caller's answer reads. */
const listed = `r.endpoint = '/v1/responses' AND r.service_tier <> 'flex'`

export const responseReads = (db: Database.Database) => {
  const s = {
    one: db.prepare<[string], StoredResponse>(`SELECT ${columns} WHERE r.id = ?`),
    firstPage: db.prepare<[string, number], StoredResponse>(`SELECT ${columns} WHERE r.account_id = ? AND ${listed} ORDER BY r.seq DESC LIMIT ?`),
    nextPage: db.prepare<[string, number, number], StoredResponse>(
      `SELECT ${columns} WHERE r.account_id = ? AND ${listed} AND r.seq < ? ORDER BY r.seq DESC LIMIT ?`,
    ),
    streamFirstPage: db.prepare<[string, string, number], StoredResponse>(
      `SELECT ${columns} WHERE r.account_id = ? AND r.stream_id = ? ORDER BY r.seq DESC LIMIT ?`,
    ),
    streamNextPage: db.prepare<[string, string, number, number], StoredResponse>(
      `SELECT ${columns} WHERE r.account_id = ? AND r.stream_id = ? AND r.seq < ? ORDER BY r.seq DESC LIMIT ?`,
    ),
  }
  return {
    /**
     * Another account's response reads exactly like one that does not exist, and so does a flex chat
     * completion: it was answered as a chat completion, and is no response of the caller's.
     */
    ofAccount: (accountId: string, id: string): StoredResponse | undefined => {
      const row = s.one.get(id)
      return row !== undefined && row.account_id === accountId && row.endpoint === "/v1/responses" ? row : undefined
    },
    /** Any queued request, flex chat completions included: for the call that waits on it. */
    one: (id: string): StoredResponse | undefined => s.one.get(id),
    /** Newest first, `limit + 1` rows (the extra one says there are more); `afterSeq` is the previous page's last. */
    page: (accountId: string, limit: number, afterSeq: number | undefined, streamId: string | undefined): Array<StoredResponse> =>
      streamId === undefined
        ? afterSeq === undefined
          ? s.firstPage.all(accountId, limit + 1)
          : s.nextPage.all(accountId, afterSeq, limit + 1)
        : afterSeq === undefined
          ? s.streamFirstPage.all(accountId, streamId, limit + 1)
          : s.streamNextPage.all(accountId, streamId, afterSeq, limit + 1),
  }
}
export type ResponseReads = ReturnType<typeof responseReads>
