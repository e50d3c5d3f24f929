import { join } from "node:path"
import Database from "better-sqlite3"
import { type BatchEvent, type BatchEventType } from "../src/domain/batch/events.js"
import { decodeBatchMessage, eventsOf } from "../src/domain/batch/laneWindow.js"
import { batchSubject } from "../src/domain/batch/subjects.js"

export interface Logged {
  readonly seq: number
  readonly event: BatchEvent
}

/**
 * Some events of some batches, in log order, read from a running Sluice's embedded log (the
 * documented `messages` table): the exact `at` times and start order that polling can only estimate.
 * Row events are read from the batches' lane windows, in their order within each window.
 */
export const readBatchEvents = (
  dataDir: string,
  batchIds: ReadonlyArray<string>,
  types: ReadonlyArray<BatchEventType>,
): Array<Logged> => {
  const db = new Database(join(dataDir, "log.sqlite"), { readonly: true, fileMustExist: true })
  try {
    const bySubject = db.prepare<[string], { seq: number; data: Buffer }>("SELECT seq, data FROM messages WHERE subject = ? ORDER BY seq")
    const byPrefix = db.prepare<[number, string], { seq: number; data: Buffer }>("SELECT seq, data FROM messages WHERE substr(subject, 1, ?) = ? ORDER BY seq")
    const lanes = (batchId: string) => {
      const prefix = `batch.${batchId}.lane.`
      return byPrefix.all(prefix.length, prefix)
    }
    const wanted: ReadonlySet<string> = new Set(types)
    const out: Array<Logged & { readonly index: number }> = []
    for (const id of batchIds) {
      const messages = [...types.map((type) => bySubject.all(batchSubject(id, type))).flat(), ...lanes(id)]
      for (const { seq, data } of messages) {
        const message = decodeBatchMessage(data)
        if (message === undefined) continue
        eventsOf(message).forEach((event, index) => {
          if (wanted.has(event.type)) out.push({ seq, index, event })
        })
      }
    }
    return out.sort((a, b) => a.seq - b.seq || a.index - b.index).map(({ seq, event }) => ({ seq, event }))
  } finally {
    db.close()
  }
}

/**
 * When each settled row of a batch was appended to a running Sluice's embedded log: its
 * `row_completed` message's `time` (Date.now() as the append's transaction began), by row.
 */
export const rowCompletedAppendTimes = (dataDir: string, batchId: string): Map<number, number> => {
  const db = new Database(join(dataDir, "log.sqlite"), { readonly: true, fileMustExist: true })
  try {
    const prefix = `batch.${batchId}.lane.`
    const lanes = db.prepare<[number, string], { data: Buffer; time: number }>("SELECT data, time FROM messages WHERE substr(subject, 1, ?) = ? ORDER BY seq")
    const times = new Map<number, number>()
    for (const { data, time } of lanes.all(prefix.length, prefix)) {
      const message = decodeBatchMessage(data)
      if (message === undefined) continue
      for (const event of eventsOf(message)) if (event.type === "row_completed") times.set(event.row, time)
    }
    return times
  } finally {
    db.close()
  }
}
