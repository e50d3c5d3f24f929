import { join } from "node:path"
import Database from "better-sqlite3"
import { type BatchEvent, type BatchEventType } from "../src/domain/batch/events.js"
import { batchSubject } from "../src/domain/batch/subjects.js"

export interface Logged {
  readonly seq: number
  readonly event: BatchEvent
}

/**
 * Some events of some batches, in log order, read from a running Sluice's embedded log (the
 * documented `messages` table): the exact `at` times and start order that polling can only estimate.
 */
export const readBatchEvents = (
  dataDir: string,
  batchIds: ReadonlyArray<string>,
  types: ReadonlyArray<BatchEventType>,
): Array<Logged> => {
  const db = new Database(join(dataDir, "log.sqlite"), { readonly: true, fileMustExist: true })
  try {
    const select = db.prepare<[string], { seq: number; data: Buffer }>("SELECT seq, data FROM messages WHERE subject = ? ORDER BY seq")
    const out: Array<Logged> = []
    for (const id of batchIds) {
      for (const type of types) {
        for (const { seq, data } of select.all(batchSubject(id, type))) {
          out.push({ seq, event: JSON.parse(data.toString("utf8")) as BatchEvent })
        }
      }
    }
    return out.sort((a, b) => a.seq - b.seq)
  } finally {
    db.close()
  }
}
