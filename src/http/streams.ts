import { Effect, Either, Schedule, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { BatchWriter } from "../actors/BatchWriter.js"
import { StreamRetention } from "../actors/StreamRetention.js"
import { Dispatcher } from "../actors/Dispatcher.js"
import { formatCompletionId } from "../domain/completion/feedPosition.js"
import { isObject } from "../domain/json.js"
import { decidePatch, type StreamPatch } from "../domain/stream/decide.js"
import { type StreamEvent, StreamWindow, onceOnlyStreamTypes, streamSubject } from "../domain/stream/events.js"
import { EventLog } from "../eventlog/EventLog.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import { type StreamRow, type StreamTombstone, streamReads } from "../projections/streamReads.js"
import type { WaitingOn } from "../domain/waiting/waitingOn.js"
import { type Caller, requireAllowedPriority } from "./auth.js"
import { sentPriority } from "../domain/batch/priorityField.js"
import { DEFAULT_PRIORITY } from "../domain/scheduling/priority.js"
import { BatchAccess } from "./batchAccess.js"
import { readJsonBody } from "./body.js"
import { badRequest, conflict, notFound } from "./errors.js"

const STREAM_BODY_BYTES = 64 * 1024
/** How often items of closed streams that still wait are looked for (a cancel cut short, an item that raced it). */
const SWEEP_EVERY = "10 seconds"
const encoder = new TextEncoder()
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
const isWindow = Schema.is(StreamWindow)

export const streamNotFound = (id: string) => notFound(`No stream found with id '${id}'`, "stream_not_found")

const isoSeconds = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z")
/** The owner's 404 for a stream purged after its retention, as a deleted batch answers: it says so, and when. */
export const streamDeleted = (tombstone: StreamTombstone) =>
  notFound(
    `Stream '${tombstone.id}' was deleted at ${isoSeconds(tombstone.purged_at)}, when its retention period after its archive ` +
      `(${isoSeconds(tombstone.archived_at)}) ended; its history is gone`,
    "stream_deleted",
  )

const summary = (row: StreamRow, waitingOn: WaitingOn | null) => ({
  id: row.id,
  object: "stream" as const,
  name: row.name,
  window: row.window,
  status: row.status,
  created_at: iso(row.created_at)!,
  updated_at: iso(row.updated_at)!,
  priority: row.priority ?? DEFAULT_PRIORITY,
  waiting_on: waitingOn,
})

/**
 * Streams: long-lived, named queues of responses that arrive over time. A stream holds no work of its
 * own: each item is a response naming it (`metadata.stream_id`), queued like a background response
 * with the stream's window as its start-by time.
 */
export class Streams extends Effect.Service<Streams>()("Http/Streams", {
  scoped: Effect.gen(function* () {
    const access = yield* BatchAccess
    const log = yield* EventLog
    const projector = yield* Projector
    const writer = yield* BatchWriter
    const dispatcher = yield* Dispatcher
    const retention = yield* StreamRetention
    const reads = streamReads(yield* ReadModel)

    const detail = (row: StreamRow) => {
      const n = reads.counts(row.id)
      const latest = reads.latestCompletion(row.id)
      const waitingItem = reads.oldestWaitingItem(row.id)
      const settled = n.completed + n.failed + n.cancelled
      return {
        ...summary(row, waitingItem === undefined ? null : access.waiting.one(waitingItem)),
        cancelled_at: iso(row.cancelled_at),
        archived_at: iso(row.archived_at),
        total_items: n.total,
        pending_items: n.pending,
        running_items: n.running,
        completed_items: n.completed,
        failed_items: n.failed,
        cancelled_items: n.cancelled,
        completion_ratio: n.total === 0 ? 0 : settled / n.total,
        total_prompt_tokens: n.input_tokens,
        total_completion_tokens: n.output_tokens,
        total_tokens: n.total_tokens,
        last_completion_at: n.last_completed_at === null ? null : iso(n.last_completed_at * 1000),
        latest_completion_id: latest === undefined ? null : formatCompletionId(latest),
      }
    }

    /**
     * A once-only event the log already holds (a concurrent cancel, say) leaves the stream as asked. A rename
     * goes after the subject's last message, so that each subject has one writer at a time and its hash
     * chain holds: a concurrent rename makes it try again after that one.
     */
    const append = (event: StreamEvent) => {
      const subject = streamSubject(event.stream_id, event.type)
      const data = encoder.encode(JSON.stringify(event))
      if (onceOnlyStreamTypes.has(event.type)) {
        return log
          .append([{ subject, data, expectLastSubjectSeq: 0, msgId: `${event.stream_id}:${event.type}` }])
          .pipe(Effect.catchTag("WrongLastSequence", () => log.lastSeq.pipe(Effect.map((seq) => [{ seq }]))))
      }
      return Effect.flatMap(log.lastSeqOf(subject), (last) => log.append([{ subject, data, expectLastSubjectSeq: last }])).pipe(
        Effect.retry({ while: (e) => e._tag === "WrongLastSequence", times: 10 }),
        Effect.catchTag("WrongLastSequence", () => Effect.fail(conflict(`Stream '${event.stream_id}' is being changed by other requests at the same time: try again`))),
      )
    }

    const write = (events: ReadonlyArray<StreamEvent>) =>
      Effect.gen(function* () {
        if (events.length === 0) return
        const written = yield* Effect.forEach(events, append).pipe(Effect.catchTag("LogUnavailable", (e) => Effect.fail(access.logDown(e))))
        yield* projector.awaitSeq(Math.max(...written.flat().map((w) => w.seq)))
      })

    /** The caller's stream; its owner is told when it was purged, anyone else that no such stream exists. */
    const owned = (caller: Caller, id: string) => {
      const row = reads.ofAccount(caller.account.id, id)
      if (row !== undefined) return Effect.succeed(row)
      const tombstone = reads.tombstoneOf(caller.account.id, id)
      return Effect.fail(tombstone === undefined ? streamNotFound(id) : streamDeleted(tombstone))
    }

    /** Its items not yet started are cancelled, one by one; a crash midway leaves the rest to `sweep`. */
    const cancelItems = (streamId: string) =>
      Effect.forEach(
        reads.unfinishedItems(streamId),
        (id) =>
          Effect.flatMap(writer.now, (at) => writer.execute(id, { type: "Cancel", at })).pipe(
            Effect.tap(() => Effect.sync(() => dispatcher.dropBatch(id))),
            Effect.map((written) => written.seq),
            Effect.catchAll((e) => Effect.as(Effect.logWarning(`item ${id} of stream ${streamId} could not be cancelled yet: ${e._tag}`), 0)),
          ),
        { concurrency: 16 },
      ).pipe(Effect.flatMap((seqs) => projector.awaitSeq(Math.max(0, ...seqs))))

    const create = (caller: Caller) =>
      Effect.gen(function* () {
        yield* access.reachable
        const body = yield* readJsonBody(STREAM_BODY_BYTES, { emptyIs: {} })
        if (!isObject(body)) return yield* Effect.fail(badRequest("The request body must be a JSON object with 'name' and, optionally, 'window'"))
        const name = body["name"]
        if (typeof name !== "string" || name.trim().length === 0)
          return yield* Effect.fail(badRequest("'name' must be a non-empty string", "name"))
        const window = body["window"] ?? "24h"
        if (!isWindow(window)) return yield* Effect.fail(badRequest(`'window' must be one of 15m, 1h, 24h, got ${JSON.stringify(window)}`, "window"))
        const sent = sentPriority(body["priority"])
        if (sent._tag === "Refused") return yield* Effect.fail(badRequest(sent.message, "priority"))
        const priority = sent._tag === "Asked" ? sent.priority : DEFAULT_PRIORITY
        yield* requireAllowedPriority(caller, priority)
        const id = `stream_${randomUUID().replaceAll("-", "")}`
        const at = yield* writer.now
        yield* write([
          {
            type: "stream_created",
            stream_id: id,
            account_id: caller.account.id,
            key_id: caller.keyId,
            name,
            window,
            at,
            // Standard is left out, so that a stream created as before is stored as before.
            ...(priority === DEFAULT_PRIORITY ? {} : { priority }),
          },
        ])
        return detail(reads.ofAccount(caller.account.id, id)!)
      })

    const list = (caller: Caller) =>
      Effect.gen(function* () {
        yield* access.reachable
        const waiting = new Map(reads.oldestWaitingItems(caller.account.id).map((item) => [item.item_of, access.waiting.ofBatch(item)]))
        return { object: "list" as const, items: reads.list(caller.account.id).map((row) => summary(row, waiting.get(row.id) ?? null)) }
      })

    const get = (caller: Caller, id: string) =>
      Effect.gen(function* () {
        yield* access.reachable
        return detail(yield* owned(caller, id))
      })

    const patch = (caller: Caller, id: string) =>
      Effect.gen(function* () {
        yield* access.reachable
        const row = yield* owned(caller, id)
        const body = yield* readJsonBody(STREAM_BODY_BYTES, { emptyIs: {} })
        if (!isObject(body)) return yield* Effect.fail(badRequest("The request body must be a JSON object with 'name' or 'status'"))
        for (const key of Object.keys(body)) {
          if (key !== "name" && key !== "status") return yield* Effect.fail(badRequest(`Unknown field '${key}': a stream's patch takes 'name' and 'status'`, key))
        }
        const wanted: { name?: string; status?: StreamPatch["status"] } = {}
        if (body["name"] !== undefined) {
          const name = body["name"]
          if (typeof name !== "string" || name.trim().length === 0) return yield* Effect.fail(badRequest("'name' must be a non-empty string", "name"))
          wanted.name = name
        }
        if (body["status"] !== undefined) {
          const status = body["status"]
          if (status !== "cancelled" && status !== "archived")
            return yield* Effect.fail(badRequest(`'status' must be 'cancelled' or 'archived' (a stream never reopens), got ${JSON.stringify(status)}`, "status"))
          wanted.status = status
        }
        const decided = decidePatch({ id: row.id, accountId: row.account_id, status: row.status }, wanted, yield* writer.now)
        if (Either.isLeft(decided)) return yield* Effect.fail(conflict(decided.left.message))
        yield* write(decided.right)
        const after = reads.ofAccount(caller.account.id, id)!
        if (after.status === "archived") yield* retention.archived(id)
        if (after.status !== "open") yield* cancelItems(id)
        return detail(reads.ofAccount(caller.account.id, id)!)
      })

    /** Items of closed streams still waiting: cancelled, after a cancel a crash or a concurrent create cut short. */
    const sweep = Effect.suspend(() => Effect.forEach(reads.closedWithItems(), cancelItems, { discard: true }))
    yield* sweep.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("the sweep of closed streams' items failed; it runs again", cause)),
      Effect.repeat(Schedule.spaced(SWEEP_EVERY)),
      Effect.forkScoped,
    )

    return { create, list, get, patch, sweep, standing: (caller: Caller, id: string) => reads.ofAccount(caller.account.id, id) } as const
  }),
}) {}
