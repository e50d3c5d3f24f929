import { Effect, Stream } from "effect"
import { decodeBatchMessage, eventsOf } from "../domain/batch/laneWindow.js"
import { type BatchState, evolve, initialState } from "../domain/batch/state.js"
import { eventsOnly, isRowBodiesSubject, oneBatch } from "../domain/batch/subjects.js"
import type { EventLogShape, LogUnavailable } from "../eventlog/EventLog.js"
import { type BatchOwner, ownerOf } from "./batchState.js"


/** What a writer knows of a batch: its state, its owner, each row's model, and how far the log was read. */
export interface LoadedBatch {
  readonly state: BatchState
  readonly owner: BatchOwner | undefined
  readonly rowModels: ReadonlyArray<string>
  readonly seq: number
  /** Each lane's last window, by model: where its next window goes, and under which lease it was written. */
  readonly tips: ReadonlyMap<string, LaneTip>
}

export interface LaneTip {
  readonly seq: number
  readonly lease: number
}

/**
 * A batch rebuilt from its own events in the log, never from a read model: an instance's decisions do
 * not depend on how far its projections have got. Request bodies are left unread.
 */
export const loadBatchFromLog = (log: EventLogShape, batchId: string): Effect.Effect<LoadedBatch, LogUnavailable> =>
  Effect.suspend(() => {
    let state = initialState(batchId)
    let owner: BatchOwner | undefined
    const rowModels: Array<string> = []
    let seq = 0
    const tips = new Map<string, LaneTip>()
    return log.read(oneBatch(batchId), 1, eventsOnly).pipe(
      Stream.runForEach((message) =>
        Effect.sync(() => {
          seq = Math.max(seq, message.seq)
          if (isRowBodiesSubject(message.subject)) return
          const decoded = decodeBatchMessage(message.data)
          if (decoded === undefined) return
          if (decoded.type === "lane_window") tips.set(decoded.model, { seq: message.seq, lease: decoded.lease })
          for (const event of eventsOf(decoded)) {
            if (event.type === "batch_created") owner = ownerOf(event)
            if (event.type === "rows_added") event.rows.forEach((row, i) => (rowModels[event.first + i] = row.model))
            state = evolve(state, event)
          }
        }),
      ),
      Effect.map(() => ({ state, owner, rowModels, seq, tips })),
    )
  })
