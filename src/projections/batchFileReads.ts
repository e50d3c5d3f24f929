import type Database from "better-sqlite3"
import type { BatchFileKind } from "../domain/file/batchFiles.js"
import type { BatchRow } from "./batchReads.js"

/*
 * A file-based batch's output and error files, read from its results: the output file holds the rows
 * that completed, the error file the others (failed, expired, cancelled), each line in OpenAI's batch
 * output format, `{"id", "custom_id", "response", "error"}`, in submission order. Nothing is copied:
 * SQLite builds each page's lines from the stored JSON, spliced in unparsed.
 */

const lineSql = `'{"id":"batch_req_' || (idx + 1) || '","custom_id":' || json_quote(custom_id) || ',"response":' ||
  coalesce(response, 'null') || ',"error":' || coalesce(error, 'null') || '}' || char(10)`
// The same line's length in bytes, without building it: 54 bytes of fixed text and newline around the parts.
const lineBytesSql = `(54 + length(idx + 1) + octet_length(json_quote(custom_id)) + coalesce(octet_length(response), 4) +
  coalesce(octet_length(error), 4))`
const kindSql = { output: `status = 'completed'`, error: `status <> 'completed'` } as const
/** Pages smaller than this cost more in queries than a running sum of the lines' lengths costs. */
const SMALL_PAGE_BYTES = 16 * 1024

interface FileSize {
  readonly bytes: number
  readonly lines: number
  readonly longestLine: number
}

interface Page {
  readonly n: number
  readonly last: number | null
  readonly bytes: Buffer | null
}

export const batchFileReads = (db: Database.Database) => {
  const statements = (kind: BatchFileKind) => ({
    size: db.prepare<[string], { bytes: number | null; lines: number; longestLine: number | null }>(
      `SELECT sum(len) AS bytes, count(*) AS lines, max(len) AS longestLine
       FROM (SELECT ${lineBytesSql} AS len FROM results WHERE batch_id = ? AND ${kindSql[kind]})`,
    ),
    page: db.prepare<[string, number, number], Page>(
      `SELECT count(*) AS n, max(idx) AS last, CAST(group_concat(${lineSql}, '' ORDER BY idx) AS BLOB) AS bytes
       FROM (SELECT idx, custom_id, response, error FROM results WHERE batch_id = ? AND idx >= ? AND ${kindSql[kind]} ORDER BY idx LIMIT ?)`,
    ),
    // The first row, then the rows that keep the page's running sum within the budget.
    summedPage: db.prepare<[string, number, number, number], Page>(
      `WITH page AS (
         SELECT idx, custom_id, response, error, sum(${lineBytesSql}) OVER (ORDER BY idx ROWS UNBOUNDED PRECEDING) AS upto
         FROM (SELECT idx, custom_id, response, error FROM results WHERE batch_id = ? AND idx >= ? AND ${kindSql[kind]} ORDER BY idx LIMIT ?)
       )
       SELECT count(*) AS n, max(idx) AS last, CAST(group_concat(${lineSql}, '' ORDER BY idx) AS BLOB) AS bytes
       FROM page WHERE upto <= ? OR upto = ${lineBytesSql}`,
    ),
    more: db
      .prepare<[string, number], number>(`SELECT EXISTS (SELECT 1 FROM results WHERE batch_id = ? AND idx >= ? AND ${kindSql[kind]})`)
      .pluck(),
  })
  const s = { output: statements("output"), error: statements("error") }
  const fileBatches = db.prepare<[string], BatchRow>(
    `SELECT * FROM batches WHERE account_id = ? AND input_file_id IS NOT NULL AND status IN ('completed', 'failed', 'expired', 'cancelled') ORDER BY seq`,
  )
  /** A final batch's results never change, so a view's size is computed once per instance. */
  const sizes = new Map<string, FileSize>()
  const sizeOf = (batchId: string, kind: BatchFileKind): FileSize => {
    const key = `${batchId} ${kind}`
    const known = sizes.get(key)
    if (known !== undefined) return known
    const row = s[kind].size.get(batchId)
    const size = { bytes: row?.bytes ?? 0, lines: row?.lines ?? 0, longestLine: row?.longestLine ?? 0 }
    if (sizes.size > 10_000) sizes.clear()
    sizes.set(key, size)
    return size
  }
  return {
    /** The account's final batches read from files: those that may have views. */
    fileBatchesOf: (accountId: string) => fileBatches.all(accountId),
    /** The file's size in bytes: the sum of its lines'. */
    bytes: (batchId: string, kind: BatchFileKind): number => sizeOf(batchId, kind).bytes,
    /**
     * The file's lines from row `fromIdx` on, as UTF-8 bytes: at most `maxRows` rows and at most `maxBytes`
     * (one line when a line is longer); `next` is where the following page starts.
     */
    page: (batchId: string, kind: BatchFileKind, fromIdx: number, maxRows: number, maxBytes: number) => {
      // As many rows as the file's longest line allows: a running sum of the lines' lengths makes SQLite
      // copy the page's rows once more, which costs as much as building them. Only a file with an
      // outsized line, whose pages would otherwise be small, is cut by the sum.
      const size = sizeOf(batchId, kind)
      const rows = Math.max(1, Math.min(maxRows, Math.floor(maxBytes / Math.max(1, size.longestLine))))
      const small = rows < maxRows && (rows * size.bytes) / Math.max(1, size.lines) < SMALL_PAGE_BYTES
      const page = small ? s[kind].summedPage.get(batchId, fromIdx, maxRows, maxBytes) : s[kind].page.get(batchId, fromIdx, rows)
      if (page === undefined || page.n === 0 || page.last === null || page.bytes === null) {
        return { bytes: Buffer.alloc(0), next: undefined }
      }
      return { bytes: page.bytes, next: s[kind].more.get(batchId, page.last + 1) === 1 ? page.last + 1 : undefined }
    },
  }
}
export type BatchFileReads = ReturnType<typeof batchFileReads>
