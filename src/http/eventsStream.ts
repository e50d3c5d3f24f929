import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { type Chunk, Clock, Deferred, Duration, Effect, Stream } from "effect"
import { BatchEvent, onceOnlyTypes, type RowBodies } from "../domain/batch/events.js"
import { decodeBatchMessage, eventsOf } from "../domain/batch/laneWindow.js"
import { type PublicBatchEvent, isTerminalRowEvent, publicEvent } from "../domain/batch/publicEvent.js"
import { isFinal } from "../domain/batch/state.js"
import { isRowBodiesSubject, oneBatch, withoutRowBodies } from "../domain/batch/subjects.js"
import type { EventLogShape, LogMessage } from "../eventlog/EventLog.js"
import type { BatchReads } from "../projections/batchReads.js"
import type { ProjectorShape } from "../projections/Projector.js"
import type { ResultReads } from "../projections/resultReads.js"
import { badRequest } from "./errors.js"
import { type EventCursor, cursorAfter, formatCursor, fromTheStart, parseCursor } from "./eventsStreamCursor.js"

const KEEPALIVE_AFTER_MS = 15_000
const IDLE_CHECK = Duration.seconds(5)
const PROJECTION_WAIT = Duration.seconds(2)

/** The events after which the batch may be done: a row or the batch itself settled, or it was deleted. */
const settlingTypes: ReadonlySet<BatchEvent["type"]> = new Set<BatchEvent["type"]>([
  "row_completed",
  "row_failed",
  "row_cancelled",
  ...[...onceOnlyTypes].filter((type) => type !== "batch_created" && type !== "batch_started"),
])

const encoder = new TextEncoder()

type Shown = Exclude<BatchEvent, typeof RowBodies.Type>

/** The batch's events a watcher is shown (a lane window's each): not its request bodies, which are most of its bytes. */
const eventsOfMessage = (message: LogMessage): ReadonlyArray<Shown> => {
  if (isRowBodiesSubject(message.subject)) return []
  const decoded = decodeBatchMessage(message.data)
  return decoded === undefined ? [] : eventsOf(decoded).filter((e): e is Shown => e.type !== "row_bodies")
}

const frame = (cursor: EventCursor, event: PublicBatchEvent) =>
  `id: ${formatCursor(cursor)}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`

export interface EventsStreamSources {
  readonly log: EventLogShape
  readonly projector: ProjectorShape
  readonly batches: BatchReads
  readonly results: ResultReads
  readonly closing: Deferred.Deferred<void>
}

interface Step {
  readonly text: string
  readonly done: boolean
}

/**
 * A batch's events after `after` as Server-Sent Events: its history, then live events until the
 * batch is done. The read model tells when it is done; whatever made it so is in the log by then,
 * so once it says so the stream reads the log to its current end and stops.
 */
export const batchEventsStream = (sources: EventsStreamSources, batchId: string, after: EventCursor) =>
  Stream.suspend(() => {
    const { log, projector, batches, results } = sources
    const filter = oneBatch(batchId)
    let position = after
    let gone = false
    let lastWrite = 0

    const finished = () => {
      const batch = batches.one(batchId)
      return batch === undefined || (isFinal(batch.status) && !results.unsettled(batchId))
    }

    const render = (messages: Chunk.Chunk<LogMessage>) => {
      let text = ""
      let settling = false
      for (const message of messages) {
        if (gone) break
        if (message.seq <= position.seq) continue
        const cursor = cursorAfter(message)
        for (const event of eventsOfMessage(message)) {
          let shown: PublicBatchEvent | undefined
          if (isTerminalRowEvent(event)) {
            const customId = results.customId(batchId, event.row)
            // A row leaves the read model only with its deleted batch, whose events end here.
            if (customId === undefined && batches.one(batchId) === undefined) {
              gone = true
              break
            }
            if (customId !== undefined) shown = publicEvent(event, customId)
          } else shown = publicEvent(event)
          if (shown === undefined) continue
          text += frame(cursor, shown)
          settling ||= settlingTypes.has(event.type)
          if (event.type === "batch_deleted") gone = true
        }
        if (gone) break
        position = cursor
      }
      return { text, settling }
    }

    const onMessages = (messages: Chunk.Chunk<LogMessage>) =>
      Effect.gen(function* () {
        const { text, settling } = render(messages)
        if (text !== "") lastWrite = yield* Clock.currentTimeMillis
        if (gone || !settling) return { text, done: gone }
        // The read model may not have applied what was just sent: give it a moment to say "done".
        yield* Effect.timeoutOption(projector.awaitSeq(position.seq), PROJECTION_WAIT)
        return { text, done: finished() }
      })

    const onIdleCheck = Effect.gen(function* () {
      if (finished()) return { text: "", done: true }
      const now = yield* Clock.currentTimeMillis
      if (now - lastWrite < KEEPALIVE_AFTER_MS) return { text: "", done: false }
      lastWrite = now
      return { text: ": keepalive\n\n", done: false }
    })

    const live = Stream.suspend(() =>
      Stream.merge(Stream.chunks(log.follow(filter, position.from, withoutRowBodies)), Stream.as(Stream.tick(IDLE_CHECK), "check" as const), {
        haltStrategy: "left",
      }),
    ).pipe(
      Stream.mapEffect((input): Effect.Effect<Step> => (input === "check" ? onIdleCheck : onMessages(input))),
      Stream.takeUntil((step) => step.done),
      Stream.map((step) => step.text),
    )

    // nats-server 2.9 miscounts the messages pending for a filtered consumer that starts between two
    // messages of one subject, and a JetStream read ends on that count: it stops early or never. The
    // batch's creation starts no subject's run midway (only row_bodies and rows_added come before it), nor does
    // its very start; what was sent already is skipped.
    const readFrom = (createdSeq: number) => (position.from >= createdSeq ? createdSeq : 1)

    const rest = Stream.suspend(() => {
      const batch = batches.one(batchId)
      if (gone || batch === undefined) return Stream.empty
      return log.read(filter, readFrom(batch.seq), withoutRowBodies).pipe(Stream.chunks, Stream.map((messages) => render(messages).text))
    })

    const start = Stream.fromEffect(
      Effect.map(Clock.currentTimeMillis, (now) => {
        lastWrite = now
        return `: events of ${batchId}\n\n`
      }),
    )

    return Stream.concat(start, finished() ? rest : Stream.concat(live, rest)).pipe(
      Stream.filter((text) => text !== ""),
      Stream.map((text) => encoder.encode(text)),
      // The client resumes from the last event it has, here or on another instance.
      Stream.catchAll((unavailable) =>
        Stream.drain(Stream.fromEffect(Effect.logWarning(`events of ${batchId} ended: the event log is unavailable`, unavailable))),
      ),
      Stream.interruptWhen(Deferred.await(sources.closing)),
    )
  })

export const batchEventsResponse = (sources: EventsStreamSources, batchId: string, after: EventCursor) =>
  HttpServerResponse.stream(batchEventsStream(sources, batchId, after), {
    contentType: "text/event-stream",
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no" },
  })

const invalidCursor = (where: string, text: string, param: string) =>
  badRequest(`${where} must be the id of an event of this stream, such as 1234 or 1234-1200, got '${text}'`, param)

/** Where to resume: the `Last-Event-ID` header of a reconnecting EventSource, or the query parameter polyfills send. */
export const requestedCursor = (query: string | ReadonlyArray<string> | undefined) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const header = request.headers["last-event-id"]?.trim()
    if (header !== undefined && header !== "") {
      return parseCursor(header) ?? (yield* Effect.fail(invalidCursor("The Last-Event-ID header", header, "Last-Event-ID")))
    }
    if (query !== undefined && typeof query !== "string") {
      return yield* Effect.fail(badRequest(`'last_event_id' may be given only once`, "last_event_id"))
    }
    if (query === undefined || query === "") return fromTheStart
    return parseCursor(query) ?? (yield* Effect.fail(invalidCursor("'last_event_id'", query, "last_event_id")))
  })
