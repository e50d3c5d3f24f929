/** A row waiting for a slot on one model. */
export interface QueuedRow {
  readonly accountId: string
  readonly batchId: string
  readonly row: number
}

interface Lane {
  readonly rows: Array<number>
  head: number
}

interface AccountTurns {
  readonly lanes: Map<string, Lane>
  ring: Array<string>
  next: number
}

const cyclicTake = <A>(ring: ReadonlyArray<A>, from: number, pick: (a: A) => boolean): number => {
  for (let i = 0; i < ring.length; i++) {
    const at = (from + i) % ring.length
    if (pick(ring[at]!)) return at
  }
  return -1
}

/**
 * A newcomer waits for everyone already in the ring to have their turn: it joins just behind the
 * cursor. (Joining at the end could put it ahead of those the cursor has not reached, and an
 * account that empties and comes back would jump the queue.) Answers the new cursor.
 */
const joinBehindCursor = (ring: Array<string>, next: number, id: string): number => {
  const at = ring.length === 0 ? 0 : next % ring.length
  ring.splice(at, 0, id)
  return at + 1
}

/**
 * The rows waiting on one model, served in turns: accounts take turns first, then each account's
 * batches take turns within its turn. So an account with ten batches gets the share of an account
 * with one, and a large batch never holds up a smaller one submitted after it.
 *
 * Between two rows started for one account, every other backlogged account starts at most one;
 * between two rows of one batch, every other account starts at most as many as that batch's account
 * has backlogged batches. A take costs O(accounts + that account's batches) at worst, never O(rows).
 */
export class FairQueue {
  private readonly accounts = new Map<string, AccountTurns>()
  private ring: Array<string> = []
  private next = 0
  private count = 0

  get size() {
    return this.count
  }

  push(accountId: string, batchId: string, rows: ReadonlyArray<number>) {
    if (rows.length === 0) return
    let account = this.accounts.get(accountId)
    if (account === undefined) {
      account = { lanes: new Map(), ring: [], next: 0 }
      this.accounts.set(accountId, account)
      this.next = joinBehindCursor(this.ring, this.next, accountId)
    }
    let lane = account.lanes.get(batchId)
    if (lane === undefined) {
      lane = { rows: [], head: 0 }
      account.lanes.set(batchId, lane)
      account.next = joinBehindCursor(account.ring, account.next, batchId)
    }
    for (const row of rows) lane.rows.push(row)
    this.count += rows.length
  }

  /** The rows waiting, by account: a walk over the accounts and their batches, never the rows. */
  sizesByAccount(): Map<string, number> {
    const sizes = new Map<string, number>()
    for (const [accountId, account] of this.accounts) {
      let n = 0
      for (const lane of account.lanes.values()) n += lane.rows.length - lane.head
      sizes.set(accountId, n)
    }
    return sizes
  }

  /** The next row in turn among the accounts and batches that `eligible` lets run now. */
  take(eligible: (accountId: string, batchId: string) => boolean = () => true): QueuedRow | undefined {
    if (this.ring.length === 0) return undefined
    const a = cyclicTake(this.ring, this.next, (accountId) => {
      const account = this.accounts.get(accountId)!
      return cyclicTake(account.ring, account.next, (batchId) => eligible(accountId, batchId)) >= 0
    })
    if (a < 0) return undefined
    const accountId = this.ring[a]!
    const account = this.accounts.get(accountId)!
    const b = cyclicTake(account.ring, account.next, (batchId) => eligible(accountId, batchId))
    const batchId = account.ring[b]!
    const lane = account.lanes.get(batchId)!
    const row = lane.rows[lane.head]!
    lane.head++
    this.count--
    account.next = b + 1
    this.next = a + 1
    if (lane.head === lane.rows.length) this.removeLane(accountId, batchId)
    return { accountId, batchId, row }
  }

  /**
   * A row of one batch out of turn (a deadline's): the cursors stay where they are, so the turns go on
   * as if it had not been taken.
   */
  takeFrom(accountId: string, batchId: string): QueuedRow | undefined {
    const lane = this.accounts.get(accountId)?.lanes.get(batchId)
    if (lane === undefined) return undefined
    const row = lane.rows[lane.head]!
    lane.head++
    this.count--
    if (lane.head === lane.rows.length) this.removeLane(accountId, batchId)
    return { accountId, batchId, row }
  }

  /** Whether the batch has rows waiting here. */
  holds(accountId: string, batchId: string): boolean {
    return this.accounts.get(accountId)?.lanes.has(batchId) ?? false
  }

  /** Whatever account it is of: a walk over the accounts. */
  holdsBatch(batchId: string): boolean {
    for (const account of this.accounts.values()) if (account.lanes.has(batchId)) return true
    return false
  }

  drop(batchId: string) {
    for (const [accountId, account] of this.accounts) {
      const lane = account.lanes.get(batchId)
      if (lane === undefined) continue
      this.count -= lane.rows.length - lane.head
      this.removeLane(accountId, batchId)
      return
    }
  }

  private removeLane(accountId: string, batchId: string) {
    const account = this.accounts.get(accountId)!
    account.lanes.delete(batchId)
    const at = account.ring.indexOf(batchId)
    account.ring.splice(at, 1)
    if (account.next > at) account.next--
    if (account.ring.length > 0) return
    this.accounts.delete(accountId)
    const a = this.ring.indexOf(accountId)
    this.ring.splice(a, 1)
    if (this.next > a) this.next--
  }
}
