import type Database from "better-sqlite3"

/**
 * How many batches the read model holds in each status, counted once at start and then moved by the
 * projection's own status changes, each once its transaction has committed.
 */
export const makeBatchStatusCounts = (db: Database.Database) => {
  const counts = new Map<string, number>()
  const recount = () => {
    counts.clear()
    for (const { status, n } of db.prepare(`SELECT status, count(*) AS n FROM batches GROUP BY status`).all() as Array<{
      status: string
      n: number
    }>) {
      counts.set(status, n)
    }
  }
  recount()
  let staged: Array<readonly [string | undefined, string | undefined]> = []
  const bump = (status: string | undefined, by: number) => {
    if (status !== undefined) counts.set(status, (counts.get(status) ?? 0) + by)
  }
  return {
    moved: (from: string | undefined, to: string | undefined) => {
      staged.push([from, to])
    },
    commit: () => {
      for (const [from, to] of staged) {
        bump(from, -1)
        bump(to, 1)
      }
      staged = []
    },
    discard: () => {
      staged = []
    },
    snapshot: (): ReadonlyMap<string, number> => counts,
    /** The read model was rebuilt under the counts: counted again. */
    recount,
  }
}

export type BatchStatusCounts = ReturnType<typeof makeBatchStatusCounts>
