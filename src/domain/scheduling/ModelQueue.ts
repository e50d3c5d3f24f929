import { deadlineAtRisk, startsInTime } from "./deadlines.js"
import { FairQueue, type QueuedRow } from "./FairQueue.js"
import { DEFAULT_PRIORITY, type Priority, Priorities } from "./priority.js"
import { type Shares, type Wanting, nextTurn, noShares } from "./shares.js"

/** What a batch's rows are scheduled by: their priority and the time by which each must start. */
export interface LaneTerms {
  readonly priority: Priority
  /** Unix ms; Infinity for none. */
  readonly startBy: number
}
export const defaultTerms: LaneTerms = { priority: DEFAULT_PRIORITY, startBy: Number.POSITIVE_INFINITY }

/** What a take needs to know of the model now. */
export interface TakeContext {
  readonly now: number
  /** Rows the model starts per ms as measured lately; read only when a deadline is near. */
  readonly ratePerMs: () => number | undefined
  /** Background rows may take a slot (no interactive request wants the model's slots). */
  readonly backgroundMayRun: boolean
}

export interface Taken extends QueuedRow {
  readonly priority: Priority
  /** Started ahead of its turn, for its deadline. */
  readonly early: boolean
}

/** Batches whose terms are kept once nothing of theirs is queued, for their retries. */
const TERMS_KEPT = 10_000

interface Deadline {
  readonly startBy: number
  readonly accountId: string
  readonly batchId: string
  readonly priority: Priority
}

/**
 * The rows waiting on one model: a FairQueue per priority, the shares between them (shares.ts), and
 * the lanes' start-by times. A take first saves a deadline at risk (deadlines.ts), earliest first and
 * out of every turn; otherwise it is the turn's priority's next row in its turns. `background` rows
 * only take slots nothing else wants and never jump the queue for a deadline: what they cannot start
 * in time expires. No row starts in the last moment before its start-by time (START_CUTOFF_MS): it
 * waits for its batch's expiry. A take costs O(batches) at worst, never O(rows).
 */
export class ModelQueue {
  private readonly queues: Readonly<Record<Priority, FairQueue>> = {
    high: new FairQueue(),
    standard: new FairQueue(),
    background: new FairQueue(),
  }
  /** Every queued batch's terms, and what the latest push said of one that is not queued now (its retries). */
  private readonly terms = new Map<string, LaneTerms>()
  /** The queued `high` and `standard` lanes with a start-by time, earliest first. */
  private readonly deadlines: Array<Deadline> = []
  private shares: Shares = noShares

  get size() {
    return this.queues.high.size + this.queues.standard.size + this.queues.background.size
  }

  sizeOf(priority: Priority) {
    return this.queues[priority].size
  }

  /** Rows of the batch; `terms` when first pushed (a retry's push keeps the batch's). */
  push(accountId: string, batchId: string, rows: ReadonlyArray<number>, terms?: LaneTerms) {
    if (terms !== undefined) {
      if (!this.terms.has(batchId) && this.terms.size >= TERMS_KEPT) this.forgetOne()
      this.terms.set(batchId, terms)
    }
    if (rows.length === 0) return
    const { priority, startBy } = this.terms.get(batchId) ?? defaultTerms
    const queue = this.queues[priority]
    if (!queue.holds(accountId, batchId) && priority !== "background" && Number.isFinite(startBy)) {
      this.addDeadline({ startBy, accountId, batchId, priority })
    }
    queue.push(accountId, batchId, rows)
  }

  take(eligible: (accountId: string, batchId: string) => boolean, context: TakeContext): Taken | undefined {
    const inTime = (accountId: string, batchId: string) => startsInTime(this.termsOf(batchId).startBy, context.now) && eligible(accountId, batchId)
    return this.takeForDeadline(inTime, context) ?? this.takeInTurn(inTime, context)
  }

  /** The batch is gone: its rows and its terms. */
  drop(batchId: string) {
    const terms = this.terms.get(batchId)
    this.terms.delete(batchId)
    for (const priority of terms === undefined ? Priorities : [terms.priority]) this.queues[priority].drop(batchId)
    const at = this.deadlines.findIndex((d) => d.batchId === batchId)
    if (at >= 0) this.deadlines.splice(at, 1)
  }

  sizesByAccount(): Map<string, number> {
    const sizes = new Map<string, number>()
    for (const priority of Priorities) {
      for (const [accountId, n] of this.queues[priority].sizesByAccount()) sizes.set(accountId, (sizes.get(accountId) ?? 0) + n)
    }
    return sizes
  }

  termsOf(batchId: string): LaneTerms {
    return this.terms.get(batchId) ?? defaultTerms
  }

  private takeForDeadline(eligible: (accountId: string, batchId: string) => boolean, context: TakeContext): Taken | undefined {
    const earliest = this.deadlines[0]
    const waiting = this.queues.high.size + this.queues.standard.size
    // At risk is monotone in the start-by time: if the earliest is safe, every lane is.
    if (earliest === undefined || !deadlineAtRisk(earliest.startBy, waiting, context.now, context.ratePerMs())) return undefined
    const first = this.deadlines.find((d) => eligible(d.accountId, d.batchId))
    if (first === undefined || !deadlineAtRisk(first.startBy, waiting, context.now, context.ratePerMs())) return undefined
    const row = this.queues[first.priority].takeFrom(first.accountId, first.batchId)
    if (row === undefined) return undefined
    this.afterTake(first.priority, row)
    return { ...row, priority: first.priority, early: true }
  }

  private takeInTurn(eligible: (accountId: string, batchId: string) => boolean, context: TakeContext): Taken | undefined {
    let wanting: Wanting = {
      high: this.queues.high.size > 0,
      standard: this.queues.standard.size > 0,
      background: context.backgroundMayRun && this.queues.background.size > 0,
    }
    for (;;) {
      const turn = nextTurn(wanting, this.shares)
      if (turn.priority === undefined) return undefined
      const row = this.queues[turn.priority].take(eligible)
      if (row !== undefined) {
        this.shares = turn.shares
        this.afterTake(turn.priority, row)
        return { ...row, priority: turn.priority, early: false }
      }
      // Nothing of that priority may start now (its accounts' checks): it does not want a slot.
      wanting = { ...wanting, [turn.priority]: false }
    }
  }

  private afterTake(priority: Priority, row: QueuedRow) {
    if (priority === "background" || this.queues[priority].holds(row.accountId, row.batchId)) return
    const at = this.deadlines.findIndex((d) => d.batchId === row.batchId)
    if (at >= 0) this.deadlines.splice(at, 1)
  }

  /** The oldest terms of a batch with nothing queued: a finished batch is not always dropped. */
  private forgetOne() {
    for (const [batchId, terms] of this.terms) {
      if (this.queues[terms.priority].holdsBatch(batchId)) continue
      this.terms.delete(batchId)
      return
    }
  }

  private addDeadline(deadline: Deadline) {
    let lo = 0
    let hi = this.deadlines.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (this.deadlines[mid]!.startBy <= deadline.startBy) lo = mid + 1
      else hi = mid
    }
    this.deadlines.splice(lo, 0, deadline)
  }
}
