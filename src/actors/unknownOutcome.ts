import { Effect, Schedule } from "effect"
import { type AppendInput, type EventLogShape, isOutcomeUnknown } from "../eventlog/EventLog.js"

/** How long an append whose outcome is unknown is sent again before its caller is told so. */
const RESEND = Schedule.exponential("200 millis").pipe(Schedule.union(Schedule.spaced("2 seconds")), Schedule.upTo("20 seconds"))

/**
 * Appends messages that each carry a message id or an expected last subject sequence, sending the same
 * messages again while the log cannot say whether it stored them: the leader answers one it holds as a
 * duplicate (or refuses it as out of place) and stores one it never had. Fails with AppendOutcomeUnknown
 * only once that has gone on for the schedule's time.
 */
export const appendSettled = (log: EventLogShape, messages: ReadonlyArray<AppendInput>) =>
  log.append(messages).pipe(Effect.retry({ while: isOutcomeUnknown, schedule: RESEND }))
