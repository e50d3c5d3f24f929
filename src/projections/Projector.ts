import { Chunk, Context, Data, Effect, Layer, PubSub, Queue, Schedule, Schema, type Scope, Stream } from "effect"
import { AccountEvent } from "../domain/account/events.js"
import { upcast } from "../domain/versions/upcast.js"
import { isRowEvent, type RowEvent } from "../domain/batch/events.js"
import { decodeBatchMessage, isLaneWindow, type LaneWindow } from "../domain/batch/laneWindow.js"
import { type BatchChange, batchesProjection } from "./batches.js"
import { rowEffect } from "../domain/batch/rowEffect.js"
import { eventsOnly, isRowBodiesSubject } from "../domain/batch/subjects.js"
import { EventLog, type LogMessage } from "../eventlog/EventLog.js"
import { accountsProjection } from "./accounts.js"
import { makeSeqWaiters } from "./seqWaiters.js"
import { makeChunkGathering } from "./chunkGathering.js"
import { ReadModel } from "./ReadModel.js"
import { resultsProjection } from "./results.js"
import { usageProjection } from "./usage.js"
import { type BatchStatusCounts, makeBatchStatusCounts } from "./batchStatusCounts.js"
import { Metrics } from "../metrics/Metrics.js"
import { makeThroughput, type Throughput } from "./throughput.js"
import { WebhookEvent } from "../domain/webhook/events.js"
import { webhooksProjection } from "./webhooks.js"
import { responsesProjection } from "./responses.js"
import { streamsProjection } from "./streams.js"
import { StreamEvent } from "../domain/stream/events.js"
import { FileEvent, isFilePartSubject } from "../domain/file/events.js"
import { filesProjection } from "./files.js"
import { completionsProjection } from "./completions.js"
import { makeCompletionSignals } from "./completionSignals.js"
import type { FeedPosition } from "../domain/completion/feedPosition.js"
import { makeAppliedLinks } from "./appliedLinks.js"
import { rebuildInPlace } from "./rebuild.js"
import { batchReads } from "./batchReads.js"
import { lifecycleSeqProjection } from "./lifecycleSeq.js"
import { makeWrittenWindows, type WrittenWindows } from "./writtenWindows.js"

const projectionNames = ["batches", "results", "accounts"] as const
/** How often what was applied is checked against the stream's leader while following (appliedLinks.ts). */
const CHECK_APPLIED_EVERY = "30 seconds"

/** About how long one transaction of the projector applies for before it commits and lets the event loop turn. */
const SLICE_MS = 4

/** After the I/O and timers waiting now: a fiber's yield alone may run on in the same turn. */
const nextTurn = Effect.async<void>((resume) => {
  const turn = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(turn))
})

/** The projections applied a message the log no longer holds at its place: they are rebuilt before going on. */
class Diverged extends Data.TaggedError("Diverged")<{ readonly message: string }> {}
/** A follow page is at most 2,000 messages; 8 ms is well within what a poll for a batch waits anyway. */
const GATHERING = { messages: 2_000, ms: 8 }
const decodeAccount = Schema.decodeUnknownSync(AccountEvent)
const decodeWebhook = Schema.decodeUnknownSync(WebhookEvent)
const decodeStream = Schema.decodeUnknownSync(StreamEvent)
const decodeFile = Schema.decodeUnknownSync(FileEvent)
const text = new TextDecoder()

/** The accounts whose rows one applied window changed. */
export interface AccountChanges {
  /** Their settings or keys changed. */
  readonly settings: ReadonlySet<string>
  /** Their daily usage grew. */
  readonly usage: ReadonlySet<string>
}

export interface AccountChangeSink {
  readonly settings: (accountId: string) => void
  readonly usage: (accountId: string) => void
}

export interface ProjectorShape {
  /** The last log sequence every projection has applied. */
  readonly applied: Effect.Effect<number>
  /** Waits until the projections have applied `seq`: a command answers only after its events are readable. */
  readonly awaitSeq: (seq: number) => Effect.Effect<void>
  /**
   * The account changes of every window applied from now on, each published once its transaction
   * has committed and before `awaitSeq` sees its sequence: readers of accounts invalidate what they cached.
   */
  readonly accountChanges: Effect.Effect<Queue.Dequeue<AccountChanges>, never, Scope.Scope>
  /** The batch changes of every window applied from now on, published once its transaction has committed. */
  readonly batchChanges: Effect.Effect<Queue.Dequeue<ReadonlyArray<BatchChange>>, never, Scope.Scope>
  /**
   * How old the events of the last window applied were, in ms of the log's own time (0 before any):
   * how far behind the log the projections run, while they are behind.
   */
  readonly appliedDelayMs: () => number
  /** Each model's measured rate, from the rows its projections saw settle. */
  readonly throughput: Throughput
  /**
   * Moves once a window that changed an account's settings or keys has committed, before `awaitSeq`
   * sees its sequence: what a reader of accounts read at an older one may be stale.
   */
  readonly accountsVersion: () => number
  /**
   * The account's next completion events, once the window that adds them has committed: take the signal
   * before reading the feed and await it after, and none falls between the two (completionSignals.ts).
   */
  readonly completionSignal: (accountId: string) => Effect.Effect<Effect.Effect<void>>
  /**
   * Runs `effect` as a reader waiting for what the log brings next (a flex request waiting for its
   * response to be final): while it runs, the projections apply what arrives without gathering it.
   */
  readonly promptly: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * A lane window this process appended, stored at `seq` on `subject`, as it was encoded: applied as it
   * is when the projections reach it, not decoded from the log's bytes again (writtenWindows.ts).
   */
  readonly wrote: (seq: number, subject: string, window: LaneWindow) => void
}

export class Projector extends Context.Tag("Projections/Projector")<Projector, ProjectorShape>() {}

/** Applies a window of log messages to every projection in one transaction, offsets included. */
export const makeApplier = (
  db: ReadModel["Type"],
  changed?: AccountChangeSink,
  statuses?: BatchStatusCounts,
  settled?: (batchId: string, row: number, at: number) => void,
  batchChanged?: (change: BatchChange) => void,
  completed?: (accountId: string) => void,
  written?: WrittenWindows,
) => {
  const batches = batchesProjection(db, statuses, batchChanged)
  const results = resultsProjection(db)
  const accounts = accountsProjection(db)
  const usage = usageProjection(db)
  const webhooks = webhooksProjection(db)
  const responses = responsesProjection(db)
  const streams = streamsProjection(db)
  const files = filesProjection(db)
  const completions = completionsProjection(db)
  const lifecycle = lifecycleSeqProjection(db)
  const readApplied = db.prepare(`SELECT min(seq) AS seq FROM offsets`)
  const setOffset = db.prepare(
    `INSERT INTO offsets (name, seq, resume_seq) VALUES (?, ?, ?)
     ON CONFLICT (name) DO UPDATE SET seq = excluded.seq, resume_seq = excluded.resume_seq`,
  )
  const readPartial = db.prepare<[], { seq: number; event: number }>(`SELECT seq, event FROM partial_window WHERE id = 0`)
  const setPartial = db.prepare<[number, number]>(
    `INSERT INTO partial_window (id, seq, event) VALUES (0, ?, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, event = excluded.event`,
  )
  const clearPartial = db.prepare(`DELETE FROM partial_window`)
  // A row event does what the batch's standing at its place in the log lets it, and moves the batch's
  // counters only if it moved the row.
  const applyRowEvent = (event: RowEvent, kind: string, at: FeedPosition) => {
    const batch = batches.target(event.batch_id)
    const effect = batch === undefined ? undefined : rowEffect({ status: batch.status, closedAs: batch.closing ?? undefined }, event)
    const change = batch === undefined || effect === undefined ? undefined : results.applyRow(event, effect)
    if (batch !== undefined && effect !== undefined && change !== undefined) {
      batches.applyRow(event, batch, effect)
      if (effect !== "running" && effect !== "queued") settled?.(event.batch_id, event.row, event.at)
      const feed = completions.rowSettled(event, effect, at, kind === "response", batch.account_id, change.customId)
      if (feed !== undefined) completed?.(feed)
      if (event.type === "row_completed") {
        const charged = usage.apply(event)
        if (charged !== undefined) changed?.usage(charged)
      }
    }
  }
  /**
   * Applies one message; a lane window from its event `from` on, stopping before the next event once
   * `enough` says so (answering where, with the window as decoded), having applied at least one.
   */
  const applyOne = (message: LogMessage, from: Resume | undefined, enough: () => boolean): boolean | Resume => {
    // Request bodies, most of a batch's bytes: no projection needs them (`rows_added` says where they are).
    if (isRowBodiesSubject(message.subject)) return true
    // An uploaded file's bytes: only where they are matters, until a `file_created` names them.
    if (isFilePartSubject(message.subject)) {
      files.part(message.subject.slice(5, -5), message.seq, message.time)
      return true
    }
    const kind = message.subject.slice(0, message.subject.indexOf("."))
    // A response runs as a batch of one row on its own subjects (src/domain/response/queuedResponse.ts).
    if (kind === "batch" || kind === "response") {
      const decoded = from?.window ?? written?.take(message) ?? decodeBatchMessage(message.data)
      if (decoded === undefined) return false
      if (isLaneWindow(decoded)) {
        const events = decoded.events
        for (let idx = from?.event ?? 0; idx < events.length; idx++) {
          applyRowEvent(events[idx]!, kind, { seq: message.seq, idx })
          if (idx + 1 < events.length && enough()) return { message: -1, event: idx + 1, window: decoded }
        }
        return true
      }
      // A lifecycle event settles the idle rows only if it closed the batch there.
      if (isRowEvent(decoded)) applyRowEvent(decoded, kind, { seq: message.seq, idx: 0 })
      else {
        lifecycle.saw(message.seq)
        usage.forget()
        if (decoded.type === "batch_purged") {
          const charged = usage.purged(decoded)
          if (charged !== undefined) changed?.usage(charged)
        }
        completions.batchEvent(decoded)
        if (kind === "batch") webhooks.batchEvent(decoded)
        else responses(decoded, message.seq)
        results.apply(decoded, batches.apply(decoded, message.seq), message)
      }
      return true
    }
    let payload: unknown
    try {
      payload = upcast(JSON.parse(text.decode(message.data)))
    } catch {
      return false
    }
    if (kind === "stream") {
      streams(decodeStream(payload), message.seq)
    } else if (kind === "file") {
      files.apply(decodeFile(payload), message.seq)
    } else if (kind === "webhook") {
      webhooks.apply(decodeWebhook(payload))
    } else if (kind === "account") {
      const event = decodeAccount(payload)
      if (event.type === "usage_recorded") {
        const charged = usage.apply(event)
        if (charged !== undefined) changed?.usage(charged)
      } else {
        lifecycle.saw(message.seq)
        accounts(event)
        changed?.settings(event.account_id)
      }
    }
    return true
  }
  const applyAll = db.transaction((messages: ReadonlyArray<LogMessage>, from: Resume | undefined, enough: () => boolean): Slice => {
    const skipped: Array<number> = []
    // Reading resumes before a multi-part message's first part, so messages already applied come again.
    const applied = (readApplied.get() as { seq: number | null }).seq ?? 0
    // A lane window applied in part by an earlier transaction goes on from the event it stopped before: an
    // event applied twice is not harmless (a row's later event may have moved it into the phase an earlier
    // one applies from).
    const partial = readPartial.get()
    const first = from?.message ?? 0
    let through = first - 1
    let stop: Resume | undefined
    for (let i = first; i < messages.length; i++) {
      const message = messages[i]!
      if (message.seq > applied) {
        const resume = i === first && from !== undefined ? from : message.seq === partial?.seq ? { message: i, event: partial.event } : undefined
        try {
          const outcome = applyOne(message, resume, enough)
          if (outcome === false) skipped.push(message.seq)
          else if (outcome !== true) {
            stop = { ...outcome, message: i }
            break
          }
        } catch {
          // A message on our subjects that is not one of our events (a foreign publisher) is left unapplied.
          skipped.push(message.seq)
        }
      }
      through = i
      if (i + 1 < messages.length && enough()) {
        stop = { message: i + 1, event: 0 }
        break
      }
    }
    // A window applied in part leaves the offset before it, and `partial_window` the event it goes on from.
    const last = messages[through]
    if (stop?.window !== undefined) setPartial.run(messages[stop.message]!.seq, stop.event)
    else if (partial !== undefined && last !== undefined && last.seq >= partial.seq) clearPartial.run()
    if (last !== undefined && last.seq > applied) {
      for (const name of projectionNames) setOffset.run(name, last.seq, last.resumeSeq ?? last.seq + 1)
      files.movedTo(last.time)
    }
    batches.flush()
    batches.settleClosed()
    lifecycle.flush()
    return { skipped, through, stop }
  })
  const some = (messages: ReadonlyArray<LogMessage>, from: Resume | undefined, enough: () => boolean): Slice => {
    try {
      const slice = applyAll(messages, from, enough)
      statuses?.commit()
      return slice
    } finally {
      statuses?.discard()
      batches.discard()
      usage.forget()
    }
  }
  const never = () => false
  return Object.assign((messages: ReadonlyArray<LogMessage>): Array<number> => some(messages, undefined, never).skipped, {
    /**
     * Applies the messages from `from` on, in one transaction that ends, between two messages or two
     * events of a lane window, once `enough` says so: answers where it stopped, and the last message it
     * applied in whole (`through`, an index of `messages`), whose place the offsets hold.
     */
    some,
  })
}

/** Where a window's application stopped: before the message at `message` or, in a lane window, before its `event`. */
export interface Resume {
  readonly message: number
  readonly event: number
  /** The lane window as decoded, when it stopped inside one. */
  readonly window?: LaneWindow
}

export interface Slice {
  readonly skipped: Array<number>
  readonly through: number
  readonly stop: Resume | undefined
}

export const appliedOffset = (db: ReadModel["Type"]): number => {
  const row = db.prepare(`SELECT min(seq) AS seq FROM offsets`).get() as { seq: number | null }
  return row.seq ?? 0
}

/** Where reading must resume: after the last applied message, or at an unfinished multi-part message. */
export const resumeOffset = (db: ReadModel["Type"]): number => {
  const row = db.prepare(`SELECT min(resume_seq) AS seq FROM offsets`).get() as { seq: number | null }
  return row.seq ?? 1
}

export const Live = Layer.scoped(
  Projector,
  Effect.gen(function* () {
    const db = yield* ReadModel
    const log = yield* EventLog
    let settings = new Set<string>()
    let usage = new Set<string>()
    const statuses = makeBatchStatusCounts(db)
    yield* Effect.flatMap(Metrics, (metrics) => Effect.sync(() => metrics.watchBatches(statuses.snapshot)))
    const throughput = makeThroughput(db)
    let batchChangesNow: Array<BatchChange> = []
    let completedNow = new Set<string>()
    let wakeGathering = () => {}
    const completions = makeCompletionSignals(() => wakeGathering())
    let prompt = 0
    const written = makeWrittenWindows()
    const apply = makeApplier(
      db,
      { settings: (id) => settings.add(id), usage: (id) => usage.add(id) },
      statuses,
      throughput.settled,
      (change) => batchChangesNow.push(change),
      (accountId) => completedNow.add(accountId),
      written,
    )
    const batchChanges = yield* PubSub.unbounded<ReadonlyArray<BatchChange>>()
    let appliedDelayMs = 0
    const accountChanges = yield* PubSub.unbounded<AccountChanges>()
    let accountsVersion = 0
    const applied = makeSeqWaiters(appliedOffset(db), () => wakeGathering())
    const links = makeAppliedLinks()
    /** The window's messages from `from` on, in one transaction of about SLICE_MS; answers where it stopped. */
    const applySlice = (messages: ReadonlyArray<LogMessage>, from: Resume | undefined) =>
      Effect.gen(function* () {
        settings = new Set()
        usage = new Set()
        batchChangesNow = []
        completedNow = new Set()
        const before = applied.reached()
        const started = performance.now()
        const { skipped, through, stop } = apply.some(messages, from, () => performance.now() - started >= SLICE_MS)
        const done = messages.slice(from?.message ?? 0, through + 1)
        for (const m of done) if (m.seq > before) links.saw(m)
        if (done.length > 0) appliedDelayMs = Math.max(0, Date.now() - done[0]!.time)
        if (skipped.length > 0) yield* Effect.logWarning("log messages that are not Sluice events were skipped", skipped)
        if (settings.size > 0) accountsVersion++
        if (settings.size > 0 || usage.size > 0) yield* PubSub.publish(accountChanges, { settings, usage })
        if (batchChangesNow.length > 0) yield* PubSub.publish(batchChanges, batchChangesNow)
        completions.fire(completedNow)
        if (done.length > 0) applied.advance(done[done.length - 1]!.seq)
        return stop
      })
    /**
     * A window in transactions of about SLICE_MS each, with a turn of the event loop between them: a
     * 20,000-row batch's create took one transaction of 30-42 ms, a lane window at full speed 10-18 ms,
     * each a turn of the dispatch thread in which nothing else ran.
     */
    const applyChunk = (chunk: Chunk.Chunk<LogMessage>) =>
      Effect.gen(function* () {
        const messages = Chunk.toReadonlyArray(chunk)
        if (messages.length === 0) return
        for (let stop = yield* applySlice(messages, undefined); stop !== undefined; stop = yield* applySlice(messages, stop)) {
          yield* nextTurn
        }
      }).pipe(Effect.uninterruptible)
    yield* log.read(">", resumeOffset(db), eventsOnly).pipe(Stream.runForEachChunk(applyChunk))

    const reads = batchReads(db)
    /** The follow went on with a new consumer: what was applied is checked at once. */
    const resumed = yield* Queue.sliding<void>(1)
    /**
     * What was applied since the last check, against the stream's leader: a read model that applied what
     * the log no longer holds is rebuilt from the log, and the model actors told of every unfinished batch
     * (as if created), so that their owners take them again as the log holds them.
     */
    const checkApplied = Effect.gen(function* () {
      const diverged = yield* links.diverged(log)
      if (diverged.length === 0) return
      yield* Effect.logWarning("the read model applied messages the event log no longer holds there: rebuilding it from the log", diverged.slice(0, 20))
      const rebuilt = yield* rebuildInPlace(db, log)
      links.forget()
      written.forget()
      completions.fireAll()
      statuses.recount()
      accountsVersion++
      applied.advance(rebuilt.appliedSeq)
      const unfinished = reads.unfinished().map((b): BatchChange => ({ kind: "created", batchId: b.id, models: JSON.parse(b.models) }))
      if (unfinished.length > 0) yield* PubSub.publish(batchChanges, unfinished)
      yield* Effect.logInfo(`the read model was rebuilt from the log up to seq ${rebuilt.appliedSeq}`)
    })

    // Following the log, chunks are gathered into fewer transactions unless a reader waits (chunkGathering.ts).
    // Each (re)start of the follow, after a reconnect or a stalled consumer among others, checks first.
    const follow = Effect.gen(function* () {
      yield* checkApplied
      // Readers waiting for a sequence, for a completion (a long poll) or for what comes next (flex) cut the pause short.
      const gathered = yield* makeChunkGathering<LogMessage>(GATHERING, () => applied.waited() || completions.waiting() || prompt > 0)
      wakeGathering = gathered.wake
      // Found apart while following: the follow stops, and its restart rebuilds first.
      const apart = Effect.suspend(() => (links.apart() ? Effect.fail(new Diverged({ message: "applied messages the log no longer holds" })) : Effect.void))
      yield* Effect.all(
        [
          log.follow(">", resumeOffset(db), { ...eventsOnly, onResume: () => Queue.unsafeOffer(resumed, undefined) }).pipe(Stream.runForEachChunk(gathered.offer)),
          Effect.forever(Effect.zipRight(Effect.flatMap(gathered.next, applyChunk), apart)),
          Effect.forever(Effect.zipRight(Effect.race(Effect.sleep(CHECK_APPLIED_EVERY), Queue.take(resumed)), Effect.zipRight(Effect.ignore(links.diverged(log)), apart))),
        ],
        { concurrency: 3, discard: true },
      )
    })
    yield* follow.pipe(
      Effect.tapErrorCause((cause) => Effect.logError("projection follow stopped; resuming where it left off", cause)),
      Effect.retry(Schedule.spaced("500 millis")),
      Effect.forkScoped,
    )
    return {
      applied: Effect.sync(applied.reached),
      awaitSeq: applied.awaitSeq,
      accountChanges: PubSub.subscribe(accountChanges),
      batchChanges: PubSub.subscribe(batchChanges),
      appliedDelayMs: () => appliedDelayMs,
      throughput,
      accountsVersion: () => accountsVersion,
      completionSignal: completions.signal,
      wrote: written.wrote,
      promptly: (effect) =>
        Effect.acquireUseRelease(
          Effect.sync(() => {
            prompt++
            wakeGathering()
          }),
          () => effect,
          () => Effect.sync(() => void prompt--),
        ),
    }
  }),
)
