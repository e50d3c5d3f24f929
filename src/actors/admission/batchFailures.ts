import { Effect, Exit } from "effect"
import type { OwnerError } from "../../domain/account/ownerVerdict.js"
import type { BatchWriterShape } from "../BatchWriter.js"
import { LOG_RETRY } from "../logRetry.js"

const LIMIT = 100_000

/**
 * Batches whose owner lost the right to run them: each is failed once, by whichever check sees it
 * first, retried while the log is away. `settled` runs once the failure is written or given up.
 */
export const makeBatchFailures = (
  writer: BatchWriterShape,
  fork: (effect: Effect.Effect<void>) => void,
  settled: () => void,
) => {
  const failing = new Map<string, "writing" | "written">()
  // A forgotten batch is failed again if its rows come by: the decider answers that with no event.
  const forgetWritten = () => {
    for (const [id, state] of failing) if (state === "written") failing.delete(id)
  }
  const fail = (batchId: string, error: OwnerError) => {
    if (failing.has(batchId)) return
    if (failing.size >= LIMIT) forgetWritten()
    failing.set(batchId, "writing")
    fork(
      Effect.gen(function* () {
        yield* writer.execute(batchId, { type: "Fail", at: yield* writer.now, error }).pipe(
          Effect.retry({ schedule: LOG_RETRY, while: (e) => e._tag === "LogUnavailable" }),
          Effect.catchTag("BatchNotFound", () => Effect.void),
        )
      }).pipe(
        Effect.onExit((exit) =>
          Effect.sync(() => {
            // Only a failure in the log lets the batch's rows drain; otherwise the next check tries again.
            if (Exit.isSuccess(exit)) failing.set(batchId, "written")
            else failing.delete(batchId)
            settled()
          }),
        ),
        Effect.catchAllCause((cause) => Effect.logError(`batch ${batchId} could not be failed for its owner`, cause)),
      ),
    )
  }
  return {
    fail,
    /** Undefined while the batch's owner may still run it. */
    state: (batchId: string) => failing.get(batchId),
  }
}
