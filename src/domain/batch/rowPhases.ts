import type { RowError } from "./events.js"

export type RowPhase =
  | { readonly status: "running"; readonly attempt: number }
  | { readonly status: "queued"; readonly attempt: number; readonly error: RowError }
  | { readonly status: "completed" | "failed" | "cancelled" | "expired"; readonly attempt: number }

/**
 * The phase of each row that has left its never-started state, by index: a persistent map, every version
 * answering as it was made. The newest version holds the one mutable Map and changes it in place; each
 * older one holds the change that leads from it to the next (Baker's rerooting: reading an older version
 * again walks the map back to it, turning the newer changes into such steps). A batch's writer and its
 * readers only move on from the newest state, where a change costs one Map write and one small object: as
 * an Effect HashMap it copied a path of nodes, about a microsecond and its garbage each, several times a row.
 */
export class RowPhases implements Iterable<readonly [number, RowPhase]> {
  /** The map, while this is the newest version (the root); undefined otherwise. */
  private map: Map<number, RowPhase> | undefined
  /** Otherwise: this version is `next` with `row` at `phase` (undefined: absent). */
  private row = 0
  private phase: RowPhase | undefined
  private next: RowPhases | undefined

  private constructor(map: Map<number, RowPhase> | undefined) {
    this.map = map
  }

  static empty(): RowPhases {
    return new RowPhases(new Map())
  }

  static fromEntries(entries: Iterable<readonly [number, RowPhase]>): RowPhases {
    return new RowPhases(new Map(entries))
  }

  get(row: number): RowPhase | undefined {
    return this.root().get(row)
  }

  /** A new version with `row` at `phase`; this one keeps answering as before. */
  set(row: number, phase: RowPhase): RowPhases {
    const map = this.root()
    const before = map.get(row)
    map.set(row, phase)
    const newer = new RowPhases(map)
    this.map = undefined
    this.row = row
    this.phase = before
    this.next = newer
    return newer
  }

  get size(): number {
    return this.root().size
  }

  *[Symbol.iterator](): IterableIterator<readonly [number, RowPhase]> {
    // A copy: iterating must not see a newer version's changes made meanwhile.
    yield* [...this.root()]
  }

  /** Makes this version the root: the changes from it to the newest are undone in the map, and kept as steps from there back to here. */
  private root(): Map<number, RowPhase> {
    if (this.map !== undefined) return this.map
    const path: Array<RowPhases> = []
    let at: RowPhases = this
    while (at.map === undefined) {
      path.push(at)
      at = at.next!
    }
    const map = at.map
    for (let i = path.length - 1; i >= 0; i--) {
      const older = path[i]!
      const newer = older.next!
      const now = map.get(older.row)
      if (older.phase === undefined) map.delete(older.row)
      else map.set(older.row, older.phase)
      newer.map = undefined
      newer.row = older.row
      newer.phase = now
      newer.next = older
      older.map = map
      older.phase = undefined
      older.next = undefined
    }
    return map
  }
}
