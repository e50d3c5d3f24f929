import { Effect } from "effect"
import type { BatchReads } from "../projections/batchReads.js"
import type { ProjectorShape } from "../projections/Projector.js"

interface Pending {
  readonly batchId: string
  readonly accountId: string
  readonly seq: number
}

/**
 * Batches whose create has been answered, once they were in the log, but which the read model may
 * not have yet: applying a 50,000-row batch to it takes longer than storing it. A read of such a
 * batch, or of its account's list, waits until the projections reach the batch's sequence, so a
 * client always reads what it has just created.
 */
export const pendingCreates = (projector: ProjectorShape, batches: BatchReads) => {
  const pending = new Map<string, Pending>()
  const newest = (entries: Iterable<Pending>) => {
    let seq = 0
    for (const entry of entries) seq = Math.max(seq, entry.seq)
    return seq
  }
  const awaitNewest = (entries: () => Iterable<Pending>) =>
    Effect.suspend(() => {
      const seq = newest(entries())
      return seq === 0 ? Effect.void : projector.awaitSeq(seq)
    })
  const ofAccount = function* (accountId: string) {
    for (const entry of pending.values()) if (entry.accountId === accountId) yield entry
  }
  return {
    /** Registers an answered create; answers an effect that waits until the batch is applied, then forgets it. */
    add: (batchId: string, accountId: string, seq: number) =>
      Effect.sync(() => {
        pending.set(batchId, { batchId, accountId, seq })
        return Effect.ensuring(
          projector.awaitSeq(seq),
          Effect.sync(() => pending.delete(batchId)),
        )
      }),
    /** Waits until the batch, if it was just created, is in the read model. */
    awaitBatch: (batchId: string) => awaitNewest(() => {
      const entry = pending.get(batchId)
      return entry === undefined ? [] : [entry]
    }),
    /** Waits until every batch the account just created is in the read model. */
    awaitAccount: (accountId: string) => awaitNewest(() => ofAccount(accountId)),
    /** Waits until every answered create is in the read model: one create's rows are applied at a time. */
    awaitAll: awaitNewest(() => pending.values()),
    /** The account's answered batches that the read model does not count yet. */
    unprojected: (accountId: string) => {
      let n = 0
      for (const entry of ofAccount(accountId)) if (batches.one(entry.batchId) === undefined) n++
      return n
    },
  }
}
