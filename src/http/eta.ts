import { Effect } from "effect"
import type { Priority } from "../domain/scheduling/priority.js"
import { finishesAt, rowsAhead } from "../domain/scheduling/turnsAhead.js"
import type { BatchRow } from "../projections/batchReads.js"
import { FinalBatchStatuses } from "../domain/api/BatchStatus.js"
import type { ProjectorShape } from "../projections/Projector.js"
import { type ModelQueue, queueReads } from "../projections/queueReads.js"
import type { ReadModel } from "../projections/ReadModel.js"


export interface Eta {
  readonly rows_ahead: number | null
  readonly estimated_completion_at: number | null
}
export const noEta: Eta = { rows_ahead: null, estimated_completion_at: null }

/** What the batch's own row decides: nothing to estimate once final, nothing ahead once closing; else undefined. */
export const etaOfRow = (row: Pick<BatchRow, "status" | "closing">): Eta | undefined =>
  FinalBatchStatuses.has(row.status) ? noEta : row.closing !== null ? { rows_ahead: 0, estimated_completion_at: null } : undefined

export interface ModelEstimate {
  readonly rowsAhead: number
  /** Unix ms, or undefined without a measured rate. */
  readonly finishesAt: number | undefined
}

/**
 * Queue positions and completion estimates: the turn rules over the read model's queued and running
 * counts, and each model's measured rate. `now` is the actors' clock, the one batch times are on.
 */
export const makeEtas = (db: ReadModel["Type"], projector: ProjectorShape) => {
  const reads = queueReads(db)
  // Read again only once the projections have moved: a page of 100 batches reads the queues once.
  let snapshot: { readonly seq: number; readonly byModel: Map<string, Array<ModelQueue>> } | undefined
  const byModel = () => {
    const seq = Effect.runSync(projector.applied)
    if (snapshot === undefined || snapshot.seq !== seq) {
      const grouped = new Map<string, Array<ModelQueue>>()
      for (const q of reads.queues()) grouped.set(q.model, [...(grouped.get(q.model) ?? []), q])
      snapshot = { seq, byModel: grouped }
    }
    return snapshot.byModel
  }

  /** One model's work for a batch of `accountId`: its own rows there (`mine`), queued or not yet. */
  const onModel = (model: string, accountId: string, batchId: string, mine: { queued: number; running: number; priority?: Priority }, now: number): ModelEstimate => {
    const queue = byModel().get(model) ?? []
    const ahead = rowsAhead(queue, mine.priority === undefined ? { accountId, batchId, queued: mine.queued } : { accountId, batchId, queued: mine.queued, priority: mine.priority })
    let runningOnModel = 0
    for (const q of queue) runningOnModel += q.running
    return {
      rowsAhead: ahead,
      finishesAt: finishesAt(now, projector.throughput.ratePerMs(model), { runningOnModel, ahead, queued: mine.queued, running: mine.running }),
    }
  }

  /** A batch object's `rows_ahead` and `estimated_completion_at`: null once final. */
  const ofBatch = (row: BatchRow, now: number): Eta => {
    const decided = etaOfRow(row)
    if (decided !== undefined) return decided
    let ahead = 0
    let last: number | undefined = now
    for (const [model, queue] of byModel()) {
      const mine = queue.find((q) => q.batchId === row.id)
      if (mine === undefined) continue
      const estimate = onModel(model, row.account_id, row.id, mine, now)
      ahead += estimate.rowsAhead
      last = last === undefined || estimate.finishesAt === undefined ? undefined : Math.max(last, estimate.finishesAt)
    }
    return { rows_ahead: ahead, estimated_completion_at: last === undefined ? null : Math.round(last / 1000) }
  }

  return { ofBatch, onModel }
}
export type Etas = ReturnType<typeof makeEtas>
