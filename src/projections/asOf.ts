import type Database from "better-sqlite3"
import { Chunk, Context, Effect, Layer, type Scope, Stream } from "effect"
import { decodeBatchMessage, isLaneWindow } from "../domain/batch/laneWindow.js"
import { eventTime, happenedBy } from "../domain/batch/eventTime.js"
import { isRowBodiesSubject, oneBatch, withoutRowBodies } from "../domain/batch/subjects.js"
import type { EventLogShape, LogMessage, LogUnavailable } from "../eventlog/EventLog.js"
import { makeApplier } from "./Projector.js"
import { ReadModel } from "./ReadModel.js"

const encoder = new TextEncoder()

/**
 * One batch's messages up to an instant: those whose events had happened by `asOfSeconds`, in log
 * order. Input chunks, which carry no time, go with the creation after them.
 */
export const messagesAsOf = (messages: ReadonlyArray<LogMessage>, asOfSeconds: number): Array<LogMessage> => {
  const kept: Array<LogMessage> = []
  let untimed: Array<LogMessage> = []
  for (const message of messages) {
    if (isRowBodiesSubject(message.subject)) {
      untimed.push(message)
      continue
    }
    const decoded = decodeBatchMessage(message.data)
    if (decoded === undefined) continue // not one of Sluice's events: the projections skip it too
    if (isLaneWindow(decoded)) {
      // A window's row events each at their own time: the window as it stood then.
      const events = decoded.events.filter((e) => happenedBy(e.at, asOfSeconds))
      if (events.length > 0) {
        kept.push(...untimed, { ...message, data: encoder.encode(JSON.stringify({ ...decoded, events })) })
        untimed = []
      }
      continue
    }
    const at = eventTime(decoded)
    if (at === undefined) untimed.push(message)
    else if (happenedBy(at, asOfSeconds)) {
      kept.push(...untimed, message)
      untimed = []
    }
  }
  return kept
}

/**
 * A read model holding only `batchId` as it was at `asOfSeconds`, computed from its events alone by
 * the same projections as the live one: in memory, for the scope's life.
 */
export const batchAsOf = (
  log: EventLogShape,
  batchId: string,
  asOfSeconds: number,
): Effect.Effect<Database.Database, LogUnavailable, Scope.Scope> =>
  Effect.gen(function* () {
    const db = Context.get(yield* Layer.build(ReadModel.layer(":memory:")), ReadModel)
    const messages = yield* Stream.runCollect(log.read(oneBatch(batchId), 1, withoutRowBodies))
    const apply = makeApplier(db)
    apply(messagesAsOf(Chunk.toReadonlyArray(messages), asOfSeconds))
    return db
  })
