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

export const batchFileReads = (db: Database.Database) => {
  const statements = (kind: BatchFileKind) => ({
    bytes: db
      .prepare<[string], number | null>(`SELECT sum(${lineBytesSql}) FROM results WHERE batch_id = ? AND ${kindSql[kind]}`)
      .pluck(),
    page: db.prepare<[string, number, number, number], { n: number; last: number | null; bytes: Buffer | null }>(
      `WITH page AS (
         SELECT idx, custom_id, response, error, sum(${lineBytesSql}) OVER (ORDER BY idx ROWS UNBOUNDED PRECEDING) AS upto
         FROM (SELECT idx, custom_id, response, error FROM results WHERE batch_id = ? AND idx >= ? AND ${kindSql[kind]} ORDER BY idx LIMIT ?)
       )
       SELECT count(*) AS n, max(idx) AS last, CAST(group_concat(${lineSql}, '' ORDER BY idx) AS BLOB) AS bytes
       FROM page WHERE upto - ${lineBytesSql} < ?`,
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
  const sizes = new Map<string, number>()
  return {
    /** The account's final batches read from files: those that may have views. */
    fileBatchesOf: (accountId: string) => fileBatches.all(accountId),
    /** The file's size in bytes: the sum of its lines'. */
    bytes: (batchId: string, kind: BatchFileKind): number => {
      const key = `${batchId} ${kind}`
      const known = sizes.get(key)
      if (known !== undefined) return known
      const size = s[kind].bytes.get(batchId) ?? 0
      if (sizes.size > 10_000) sizes.clear()
      sizes.set(key, size)
      return size
    },
    /**
     * The file's lines from row `fromIdx` on, as UTF-8 bytes: at most `maxRows` rows and fewer once about
     * `maxBytes` are reached (always at least one); `next` is where the following page starts.
     */
    page: (batchId: string, kind: BatchFileKind, fromIdx: number, maxRows: number, maxBytes: number) => {
      const page = s[kind].page.get(batchId, fromIdx, maxRows, maxBytes)
      if (page === undefined || page.n === 0 || page.last === null || page.bytes === null) {
        return { bytes: Buffer.alloc(0), next: undefined }
      }
      return { bytes: page.bytes, next: s[kind].more.get(batchId, page.last + 1) === 1 ? page.last + 1 : undefined }
    },
  }
}
export type BatchFileReads = ReturnType<typeof batchFileReads>
