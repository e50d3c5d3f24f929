import type Database from "better-sqlite3"
import { canonical } from "../projections/rebuild.js"

export interface ReadModelDifference {
  /** The batch it concerns; undefined for the accounts' tables. */
  readonly batchId: string | undefined
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

/** The live read model against one rebuilt from the log, batch by batch, then the accounts, keys and spending. */
export const readModelDifferences = (live: Database.Database, rebuilt: Database.Database): Array<ReadModelDifference> => {
  const ids = new Set<string>()
  for (const db of [live, rebuilt]) {
    for (const { id } of all(db, "SELECT id FROM batches UNION SELECT id FROM tombstones")) ids.add(String(id))
  }
  const out: Array<ReadModelDifference> = []
  for (const id of [...ids].sort()) {
    const lines = [
      ...diffRows(all(live, "SELECT * FROM batches WHERE id = ?", id), all(rebuilt, "SELECT * FROM batches WHERE id = ?", id), () => id, () => "batch"),
      ...diffRows(
        all(live, "SELECT * FROM results WHERE batch_id = ? ORDER BY idx", id),
        all(rebuilt, "SELECT * FROM results WHERE batch_id = ? ORDER BY idx", id),
        (r) => String(r.idx),
        (k) => `result ${k}`,
      ),
      ...diffRows(all(live, "SELECT * FROM tombstones WHERE id = ?", id), all(rebuilt, "SELECT * FROM tombstones WHERE id = ?", id), () => id, () => "tombstone"),
    ]
    for (const what of lines) out.push({ batchId: id, what })
  }
  const tables: ReadonlyArray<readonly [table: string, key: (r: Row) => string]> = [
    ["accounts", (r) => String(r.id)],
    ["api_keys", (r) => String(r.id)],
    ["usage", (r) => `${String(r.account_id)} day ${String(r.day)}`],
  ]
  for (const [table, key] of tables) {
    for (const what of diffRows(all(live, `SELECT * FROM ${table}`), all(rebuilt, `SELECT * FROM ${table}`), key, (k) => `${table} ${k}`)) {
      out.push({ batchId: undefined, what })
    }
  }
  return out
}
