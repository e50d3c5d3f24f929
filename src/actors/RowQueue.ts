/** A row waiting for a slot on one model. */
export interface QueuedRow {
  readonly batchId: string
  readonly row: number
}

interface BatchLane {
  readonly rows: Array<number>
  head: number
}

/**
 * The rows waiting on one model, one lane per batch, served in turn: each take advances to the
 * next backlogged batch, so a large batch never holds up a smaller one behind it. O(1) per take.
 */
export class RowQueue {
  private readonly lanes = new Map<string, BatchLane>()
  private ring: Array<string> = []
  private next = 0
  private count = 0

  get size() {
    return this.count
  }

  push(batchId: string, rows: ReadonlyArray<number>) {
    if (rows.length === 0) return
    let lane = this.lanes.get(batchId)
    if (lane === undefined) {
      lane = { rows: [], head: 0 }
      this.lanes.set(batchId, lane)
      this.ring.push(batchId)
    }
    for (const row of rows) lane.rows.push(row)
    this.count += rows.length
  }

  take(): QueuedRow | undefined {
    while (this.ring.length > 0) {
      if (this.next >= this.ring.length) this.next = 0
      const batchId = this.ring[this.next]!
      const lane = this.lanes.get(batchId)!
      if (lane.head < lane.rows.length) {
        const row = lane.rows[lane.head]!
        lane.head++
        this.count--
        this.next++
        if (lane.head === lane.rows.length) this.removeLane(batchId)
        return { batchId, row }
      }
      this.removeLane(batchId)
    }
    return undefined
  }

  drop(batchId: string) {
    const lane = this.lanes.get(batchId)
    if (lane === undefined) return
    this.count -= lane.rows.length - lane.head
    this.removeLane(batchId)
  }

  private removeLane(batchId: string) {
    this.lanes.delete(batchId)
    const at = this.ring.indexOf(batchId)
    if (at < 0) return
    this.ring.splice(at, 1)
    if (this.next > at) this.next--
  }
}
