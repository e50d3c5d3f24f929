import { type Duration, Effect, type Option } from "effect"
import { writtenByCalls } from "../domain/batch/subjects.js"
import type { EventLogShape, LogUnavailable } from "../eventlog/EventLog.js"
import { sharedNextRun } from "../eventlog/sharedNextRun.js"
import type { ProjectorShape } from "../projections/Projector.js"

/**
 * What a read waits for with several instances on the log: the read model caught up (within `bound`)
 * with the last message a call wrote, so that it shows what any instance's call wrote before it began.
 * Not with the log's head: all through a run the models' owners append lane windows, and a read that
 * waited for the projections to apply every one appended before it began waited for their lag.
 * Answers none when the bound passed first.
 */
export const freshReads = (
  log: Pick<EventLogShape, "lastSeqMatching">,
  projector: Pick<ProjectorShape, "awaitSeq">,
  bound: Duration.DurationInput,
): Effect.Effect<Option.Option<void>, LogUnavailable> => {
  // Hundreds of readers at once ask the log once or twice, not once each.
  const written = sharedNextRun(log.lastSeqMatching(writtenByCalls))
  return Effect.flatMap(written, (seq) => Effect.timeoutOption(projector.awaitSeq(seq), bound))
}
