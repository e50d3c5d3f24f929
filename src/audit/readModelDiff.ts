import type Database from "better-sqlite3"
import { isResponseId } from "../domain/batch/subjects.js"
import { canonical } from "../projections/rebuild.js"

export interface ReadModelDifference {
  /** What it concerns: `batch <id>`, `response <id>`, `stream <id>` or `file <id>`; undefined for the accounts' tables. */
  readonly aggregate: string | undefined
  readonly what: string
}

type Row = Record<string, unknown>

const show = (value: unknown) => (typeof value === "string" ? `'${value.length > 80 ? `${value.slice(0, 77)}...` : value}'` : String(value))

// Equal as the replay's digest counts them: sums of money may differ in their last bits between readers.
const same = (a: unknown, b: unknown) => a === b || canonical(a) === canonical(b)

const fieldDifferences = (live: Row, rebuilt: Row) =>
  Object.keys({ ...live, ...rebuilt })
    .filter((k) => !same(live[k], rebuilt[k]))
    .map((k) => `${k} live ${show(live[k])}, rebuilt ${show(rebuilt[k])}`)

const byKey = (rows: ReadonlyArray<Row>, key: (r: Row) => string) => new Map(rows.map((r) => [key(r), r]))

/** Rows of one table in both models, matched by key: what is missing from either and which fields differ. */
const diffRows = (
  live: ReadonlyArray<Row>,
  rebuilt: ReadonlyArray<Row>,
  key: (r: Row) => string,
  name: (k: string) => string,
): Array<string> => {
  const a = byKey(live, key)
  const b = byKey(rebuilt, key)
  const out: Array<string> = []
  for (const [k, row] of a) {
    const other = b.get(k)
    if (other === undefined) out.push(`${name(k)}: in the live read model only`)
    else for (const d of fieldDifferences(row, other)) out.push(`${name(k)}: ${d}`)
  }
  for (const k of b.keys()) if (!a.has(k)) out.push(`${name(k)}: in the rebuilt read model only`)
  return out
}

const all = (db: Database.Database, sql: string, ...params: Array<unknown>) => db.prepare(sql).all(...params) as Array<Row>

/**
 * The live read model against one rebuilt from the log, batch by batch (a response is a one-row batch
 * with its own row in `responses`), stream by stream, file by file, then the accounts, keys and spending.
 */
export const readModelDifferences = (live: Database.Database, rebuilt: Database.Database): Array<ReadModelDifference> => {
  const out: Array<ReadModelDifference> = []
  const compare = (idsSql: string, kindOf: (id: string) => string, parts: ReadonlyArray<readonly [sql: string, key: (r: Row) => string, name: (k: string) => string]>) => {
    const ids = new Set<string>()
    for (const db of [live, rebuilt]) for (const { id } of all(db, idsSql)) ids.add(String(id))
    for (const id of [...ids].sort()) {
      for (const [sql, key, name] of parts) {
        for (const what of diffRows(all(live, sql, id), all(rebuilt, sql, id), key, name)) out.push({ aggregate: `${kindOf(id)} ${id}`, what })
      }
    }
  }
  compare("SELECT id FROM batches UNION SELECT id FROM tombstones", (id) => (isResponseId(id) ? "response" : "batch"), [
    ["SELECT * FROM batches WHERE id = ?", (r) => String(r.id), () => "batch"],
    ["SELECT * FROM results WHERE batch_id = ? ORDER BY idx", (r) => String(r.idx), (k) => `result ${k}`],
    ["SELECT * FROM tombstones WHERE id = ?", (r) => String(r.id), () => "tombstone"],
    ["SELECT * FROM responses WHERE id = ?", (r) => String(r.id), () => "response"],
  ])
  compare("SELECT id FROM streams UNION SELECT id FROM stream_tombstones", () => "stream", [
    ["SELECT * FROM streams WHERE id = ?", (r) => String(r.id), () => "stream"],
    ["SELECT * FROM stream_tombstones WHERE id = ?", (r) => String(r.id), () => "tombstone"],
  ])
  compare("SELECT id FROM files UNION SELECT id FROM file_tombstones", () => "file", [
    ["SELECT * FROM files WHERE id = ?", (r) => String(r.id), () => "file"],
    ["SELECT * FROM file_tombstones WHERE id = ?", (r) => String(r.id), () => "tombstone"],
  ])
  const tables: ReadonlyArray<readonly [table: string, key: (r: Row) => string]> = [
    ["accounts", (r) => String(r.id)],
    ["api_keys", (r) => String(r.id)],
    ["usage", (r) => `${String(r.account_id)} day ${String(r.day)}`],
  ]
  for (const [table, key] of tables) {
    for (const what of diffRows(all(live, `SELECT * FROM ${table}`), all(rebuilt, `SELECT * FROM ${table}`), key, (k) => `${table} ${k}`)) {
      out.push({ aggregate: undefined, what })
    }
  }
  return out
}
