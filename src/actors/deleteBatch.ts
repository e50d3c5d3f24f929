import { Effect } from "effect"
import { oneBatch } from "../domain/batch/subjects.js"
import { EventLog } from "../eventlog/EventLog.js"
import { Projector } from "../projections/Projector.js"
import { BatchWriter } from "./BatchWriter.js"
import { Dispatcher } from "./Dispatcher.js"

/** Deletes a batch with its results and its history: what `DELETE` does, and retention after it. */
export const makeDeleteBatch = Effect.gen(function* () {
  const writer = yield* BatchWriter
  const projector = yield* Projector
  const dispatcher = yield* Dispatcher
  const log = yield* EventLog
  return (batchId: string) =>
    Effect.gen(function* () {
      const written = yield* writer.execute(batchId, { type: "Delete", at: yield* writer.now })
      yield* projector.awaitSeq(written.seq)
      dispatcher.dropBatch(batchId)
      // The history goes with the batch; a failed purge leaves events that the read model already ignores.
      yield* log.purge(oneBatch(batchId)).pipe(
        Effect.catchAll((e) => Effect.logWarning(`purging ${batchId} from the log failed`, e)),
      )
    })
})

export type DeleteBatch = Effect.Effect.Success<typeof makeDeleteBatch>
