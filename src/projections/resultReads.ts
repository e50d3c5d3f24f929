import type Database from "better-sqlite3"

export const resultId = (idx: number) => `batch_req_${idx + 1}`
/** `batch_req_<n>` → row index, or undefined when the text is not a result id. */
export const parseResultId = (id: string): number | undefined => {
  const match = /^batch_req_([1-9][0-9]{0,8})$/.exec(id)
  return match?.[1] === undefined ? undefined : Number(match[1]) - 1
}

interface ResultRow {
  readonly idx: number
  readonly custom_id: string
  readonly status: string
  readonly response: string | null
  readonly error: string | null
}

/** A result line as JSON text: stored JSON is spliced in, never parsed and re-serialized. */
const line = (row: ResultRow) =>
  `{"id":"${resultId(row.idx)}","custom_id":${JSON.stringify(row.custom_id)},"status":"${row.status}","response":${
    row.response ?? "null"
  },"error":${row.error ?? "null"}}`

// The same line built by SQLite from the stored UTF-8, for rows whose custom_id needs no JSON escape.
const lineSql = `'{"id":"batch_req_' || (idx + 1) || '","custom_id":"' || custom_id || '","status":"' || status ||
  '","response":' || coalesce(response, 'null') || ',"error":' || coalesce(error, 'null') || '}' || char(10)`
const plainSql = `json_quote(custom_id) = '"' || custom_id || '"'`

export interface RowChunk {
  /** The index of the event's first row. */
  readonly first: number
  /** `row_bodies`, or `rows_added` for a chunk written before bodies had their own event. */
  readonly type: "row_bodies" | "rows_added"
  readonly firstSeq: number
  readonly seq: number
}

export interface RowOutcome {
  readonly idx: number
  readonly custom_id: string
  readonly model: string
  readonly status: string
  readonly errorCode: string | null
}

interface LinesPage {
  readonly n: number
  readonly last: number | null
  readonly escaped: number | null
  readonly bytes: Buffer | null
}

/** A row no longer queued or running has its final result: the same split as the `pending` reads below. */
const isSettled = (status: string) => status !== "queued" && status !== "running"
/** How much page text is kept, in UTF-16 code units: a few MiB. */
const SETTLED_PAGES_CHARS = 4 * 2 ** 20

/**
 * Pages whose every row is settled, as their text: a batch's rows are all written at create and a
 * settled row never changes, so such a page reads the same until the batch is gone (a deleted
 * batch's pages are never asked for: its owner check answers first). Polling clients walk the same
 * pages again and again while the rest of the batch runs. The oldest go first past the budget.
 */
const settledPageCache = () => {
  const pages = new Map<string, string>()
  let chars = 0
  return {
    get: (key: string) => {
      const text = pages.get(key)
      if (text !== undefined) {
        pages.delete(key)
        pages.set(key, text)
      }
      return text
    },
    set: (key: string, text: string) => {
      if (text.length > SETTLED_PAGES_CHARS / 4 || pages.has(key)) return
      pages.set(key, text)
      chars += text.length
      for (const [oldest, old] of pages) {
        if (chars <= SETTLED_PAGES_CHARS) break
        pages.delete(oldest)
        chars -= old.length
      }
    },
  }
}

export const resultReads = (db: Database.Database) => {
  const settledPages = settledPageCache()
  const s = {
    more: db.prepare<[string, number], number>(`SELECT EXISTS (SELECT 1 FROM results WHERE batch_id = ? AND idx >= ?)`).pluck(),
    // One page of lines as one UTF-8 buffer, stopping after the row that reaches the byte budget.
    linesPage: db.prepare<[string, number, number, number], LinesPage>(
      `WITH page AS (
         SELECT idx, custom_id, status, response, error,
           sum(octet_length(custom_id) + coalesce(octet_length(response), 4) + coalesce(octet_length(error), 4))
             OVER (ORDER BY idx ROWS UNBOUNDED PRECEDING) AS upto
         FROM (SELECT idx, custom_id, status, response, error FROM results WHERE batch_id = ? AND idx >= ? ORDER BY idx LIMIT ?)
       ), kept AS (
         SELECT idx, custom_id, status, response, error FROM page
         WHERE upto - octet_length(custom_id) - coalesce(octet_length(response), 4) - coalesce(octet_length(error), 4) < ?
       )
       SELECT count(*) AS n, max(idx) AS last, sum(NOT ${plainSql}) AS escaped,
         CAST(group_concat(${lineSql}, '' ORDER BY idx) AS BLOB) AS bytes
       FROM kept`,
    ),
    page: db.prepare(
      `SELECT idx, custom_id, status, response, error FROM results WHERE batch_id = ? AND idx >= ? ORDER BY idx LIMIT ?`,
    ),
    // A filtered page walks the batch's rows in order from `after`: the console's view, not the dispatch path.
    filteredPage: db.prepare(
      `SELECT idx, custom_id, status, response, error FROM results
       WHERE batch_id = @batchId AND idx >= @from AND (@status IS NULL OR status = @status)
         AND (@code IS NULL OR json_extract(error, '$.code') = @code)
       ORDER BY idx LIMIT @limit`,
    ),
    one: db.prepare(`SELECT idx, custom_id, status, response, error FROM results WHERE batch_id = ? AND idx = ?`),
    pending: db.prepare(`SELECT idx, model, status FROM results WHERE batch_id = ? AND status IN ('queued', 'running') ORDER BY idx`),
    rowChunk: db.prepare<[string, number], RowChunk>(
      `SELECT first, type, first_seq AS firstSeq, seq FROM row_chunks WHERE batch_id = ? AND first <= ? ORDER BY first DESC LIMIT 1`,
    ),
    outcomes: db.prepare<[string], RowOutcome>(
      `SELECT idx, custom_id, model, status, json_extract(error, '$.code') AS errorCode FROM results WHERE batch_id = ? ORDER BY idx`,
    ),
    customId: db.prepare<[string, number], string>(`SELECT custom_id FROM results WHERE batch_id = ? AND idx = ?`).pluck(),
    unsettled: db
      .prepare<[string], number>(`SELECT EXISTS (SELECT 1 FROM results WHERE batch_id = ? AND status IN ('queued', 'running'))`)
      .pluck(),
  }
  /**
   * Result lines from `fromIdx` as JSON Lines text, each ending in a newline: at most `maxRows`
   * rows, and fewer once `maxChars` is reached, so large responses never pile up in one page.
   * `next` is where the following page starts, undefined after the last row.
   */
  const linesJsonl = (batchId: string, fromIdx: number, maxRows: number, maxChars: number) => {
    let text = ""
    let count = 0
    for (const row of s.page.iterate(batchId, fromIdx, maxRows) as IterableIterator<ResultRow>) {
      text += `${line(row)}\n`
      if (++count >= maxRows || text.length >= maxChars) return { text, next: row.idx + 1 }
    }
    return { text, next: undefined }
  }
  return {
    /** A results page as the JSON text the API answers. */
    pageJson: (
      batchId: string,
      fromIdx: number,
      limit: number,
      filter: { readonly status?: string | undefined; readonly code?: string | undefined } = {},
    ): string => {
      const unfiltered = filter.status === undefined && filter.code === undefined
      const key = `${batchId} ${fromIdx} ${limit}`
      if (unfiltered) {
        const kept = settledPages.get(key)
        if (kept !== undefined) return kept
      }
      const rows = (
        unfiltered
          ? s.page.all(batchId, fromIdx, limit + 1)
          : s.filteredPage.all({ batchId, from: fromIdx, limit: limit + 1, status: filter.status ?? null, code: filter.code ?? null })
      ) as Array<ResultRow>
      const hasMore = rows.length > limit
      if (hasMore) rows.pop()
      const first = rows[0]
      const last = rows[rows.length - 1]
      const text = `{"object":"list","data":[${rows.map(line).join(",")}],"has_more":${hasMore},"first_id":${
        first === undefined ? "null" : `"${resultId(first.idx)}"`
      },"last_id":${last === undefined ? "null" : `"${resultId(last.idx)}"`}}`
      if (unfiltered && rows.length > 0 && rows.every((row) => isSettled(row.status))) settledPages.set(key, text)
      return text
    },
    /**
     * Result lines from `fromIdx` as JSON Lines text, each ending in a newline: at most `maxRows`
     * rows, and fewer once `maxChars` is reached, so large responses never pile up in one page.
     * `next` is where the following page starts, undefined after the last row.
     */
    linesJsonl,
    /**
     * The same lines as UTF-8 bytes, at most `maxRows` rows and fewer once about `maxBytes` are
     * reached; `next` as in `linesJsonl`.
     */
    linesJsonlBytes: (batchId: string, fromIdx: number, maxRows: number, maxBytes: number) => {
      const page = s.linesPage.get(batchId, fromIdx, maxRows, maxBytes)
      if (page === undefined || page.n === 0 || page.last === null) return { bytes: Buffer.alloc(0), next: undefined }
      const next = s.more.get(batchId, page.last + 1) === 1 ? page.last + 1 : undefined
      if (page.escaped === 0 && page.bytes !== null) return { bytes: page.bytes, next }
      const lines = linesJsonl(batchId, fromIdx, page.n, Number.MAX_SAFE_INTEGER)
      return { bytes: Buffer.from(lines.text, "utf8"), next }
    },
    customId: (batchId: string, idx: number) => s.customId.get(batchId, idx),
    /** Every row's status and error code, in submission order: what a rerun picks from. */
    outcomes: (batchId: string) => s.outcomes.all(batchId),
    /** One result line as JSON text, or undefined when the batch has no such row. */
    lineJson: (batchId: string, idx: number): string | undefined => {
      const row = s.one.get(batchId, idx) as ResultRow | undefined
      return row === undefined ? undefined : line(row)
    },
    /** Whether any row is still queued or running. */
    unsettled: (batchId: string) => s.unsettled.get(batchId) === 1,
    /** Rows that still need a slot: read once per batch when it is enqueued, never on the dispatch path. */
    pending: (batchId: string) => s.pending.all(batchId) as Array<{ idx: number; model: string; status: "queued" | "running" }>,
    /** Where the event holding the row's request body is in the log (it holds the next rows' too). */
    rowChunk: (batchId: string, idx: number): RowChunk | undefined => s.rowChunk.get(batchId, idx),
  }
}
export type ResultReads = ReturnType<typeof resultReads>
