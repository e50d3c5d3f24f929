import { Duration, Effect, type Option } from "effect"
import { writtenByCalls } from "../domain/batch/subjects.js"
import type { EventLogShape, LogUnavailable } from "../eventlog/EventLog.js"
import { sharedNextRun } from "../eventlog/sharedNextRun.js"
import type { ProjectorShape } from "../projections/Projector.js"

/**
 * How long the log may take to name the last message a call wrote before the read waits for its head
 * instead: a NATS cluster electing a stream leader, or one just healed from a partition, may refuse
 * that lookup for a while after it answers for its head again (the partition suite saw it).
 */
const LOOKUP_WAIT = Duration.seconds(1)

/**
 * What a read waits for with several instances on the log: the read model caught up (within `bound`)
 * with the last message a call wrote, so that it shows what any instance's call wrote before it began.
 * Not with the log's head: all through a run the models' owners append lane windows, and a read that
 * waited for the projections to apply every one appended before it began waited for their lag.
 * Answers none when the bound passed first. A lookup that fails or takes too long is not the log
 * being away: the head, which a read waited for before, decides that.
 */
export const freshReads = (
  log: Pick<EventLogShape, "lastSeqMatching" | "lastSeq">,
  projector: Pick<ProjectorShape, "awaitSeq">,
  bound: Duration.DurationInput,
): Effect.Effect<Option.Option<void>, LogUnavailable> => {
  // Hundreds of readers at once ask the log once or twice, not once each.
  const written = sharedNextRun(
    log.lastSeqMatching(writtenByCalls).pipe(
      Effect.timeoutFail({ duration: LOOKUP_WAIT, onTimeout: () => "too slow" as const }),
      Effect.orElse(() => log.lastSeq),
    ),
  )
  return Effect.flatMap(written, (seq) => Effect.timeoutOption(projector.awaitSeq(seq), bound))
}
