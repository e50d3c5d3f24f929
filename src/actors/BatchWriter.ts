import { Context, Effect, Either, Exit, Layer, Runtime } from "effect"
import { randomUUID } from "node:crypto"
import { type BatchCommand, type Rejection, decide } from "../domain/batch/decide.js"
import { type BatchEvent, onceOnlyTypes } from "../domain/batch/events.js"
import { type BatchState, evolve, initialState, isFinal, type RowPhase, rowPhase } from "../domain/batch/state.js"
import { batchMsgId, batchSubject } from "../domain/batch/subjects.js"
import { type AppendInput, type AppendResult, EventLog, type LogUnavailable, type WrongLastSequence } from "../eventlog/EventLog.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import { type BatchOwner, loadBatchOwner, loadBatchState } from "./batchState.js"
import { afterWritten, logLifecycle } from "./writtenHooks.js"
import { Metrics } from "../metrics/Metrics.js"
import { appendBodies, rowsMessages } from "./rowsAdded.js"

export interface NewBatch {
  readonly accountId: string
  readonly keyId: string
  readonly completionWindowMs: number
  readonly metadata: Readonly<Record<string, string>> | null
  readonly requests: ReadonlyArray<{ readonly custom_id: string; readonly model: string; readonly body: unknown }>
  /** Chosen by the caller when it must name the batch before it is stored (an idempotency claim). */
  readonly batchId?: string
  readonly rerunOf?: string
}

export interface Written {
  readonly events: ReadonlyArray<BatchEvent>
  /** The log sequence of the last event written (or the projections' current one when nothing was). */
  readonly seq: number
  /** The events made the batch final (its final status may come with a row's event). */
  readonly finished?: boolean
}

export interface BatchWriterShape {
  readonly create: (
    batch: NewBatch,
  ) => Effect.Effect<{ readonly batchId: string; readonly seq: number; readonly createdAt: number }, LogUnavailable>
  /** Decides the command against the batch's state and writes the events: the single writer of each batch. */
  readonly execute: (batchId: string, command: BatchCommand) => Effect.Effect<Written, Rejection | LogUnavailable>
  /**
   * `execute` in two steps: answers the decided events as soon as they are decided (and the batch's state
   * has moved on), and `written` waits for the log to hold them. A caller can act on a decision while its
   * append is on the way, as long as it awaits `written` before anything that depends on it being stored.
   */
  readonly decide: (batchId: string, command: BatchCommand) => Effect.Effect<Decided, Rejection | LogUnavailable>
  readonly now: Effect.Effect<number>
  /** The row's phase as the writer knows it (the log's, after a reload). */
  readonly rowPhase: (batchId: string, row: number) => Effect.Effect<RowPhase | undefined, LogUnavailable>
}

export interface Decided {
  readonly events: ReadonlyArray<BatchEvent>
  readonly written: Effect.Effect<Written, LogUnavailable>
}

type AppendExit = Exit.Exit<ReadonlyArray<AppendResult>, LogUnavailable | WrongLastSequence>

/** One decision's place in the outbox: its append's outcome, once known, and whoever waits for it. */
interface Outgoing {
  readonly messages: ReadonlyArray<AppendInput>
  exit: AppendExit | undefined
  waiting: Array<(exit: AppendExit) => void> | undefined
  /** Run once the log holds the decision (logs, metrics). */
  readonly after: Effect.Effect<void> | undefined
}

interface Entry {
  state: BatchState
  readonly owner: BatchOwner | undefined
  readonly outbox: Array<Outgoing>
  draining: boolean
}

// Lighter than a Deferred per decision, which cost about 1.5 µs each, twice a row.
const settle = (outgoing: Outgoing, exit: AppendExit) => {
  outgoing.exit = exit
  const waiting = outgoing.waiting
  outgoing.waiting = undefined
  if (waiting !== undefined) for (const resume of waiting) resume(exit)
}
const appended = (outgoing: Outgoing): Effect.Effect<ReadonlyArray<AppendResult>, LogUnavailable | WrongLastSequence> =>
  Effect.suspend(() =>
    outgoing.exit !== undefined
      ? outgoing.exit
      : Effect.async((resume) => {
          ;(outgoing.waiting ??= []).push(resume)
        }),
  )

export const newBatchId = () => `batch_${randomUUID().replaceAll("-", "")}`

export class BatchWriter extends Context.Tag("Actors/BatchWriter")<BatchWriter, BatchWriterShape>() {}

const encoder = new TextEncoder()
const message = (event: BatchEvent): AppendInput => ({
  subject: batchSubject(event.batch_id, event.type),
  data: encoder.encode(JSON.stringify(event)),
  msgId: batchMsgId(event),
  ...(onceOnlyTypes.has(event.type) ? { expectLastSubjectSeq: 0 } : {}),
})

const createMessages = (batch: NewBatch, batchId: string, now: number) => {
  const created: BatchEvent = {
    type: "batch_created",
    batch_id: batchId,
    account_id: batch.accountId,
    key_id: batch.keyId,
    created_at: now,
    expires_at: now + batch.completionWindowMs,
    completion_window: `${Math.round(batch.completionWindowMs / 3_600_000)}h`,
    metadata: batch.metadata === null ? null : { ...batch.metadata },
    total: batch.requests.length,
    models: [...new Set(batch.requests.map((r) => r.model))],
    ...(batch.rerunOf === undefined ? {} : { rerun_of: batch.rerunOf }),
  }
  // The rows go first so that a reader never sees a created batch without its rows.
  const rows = rowsMessages(batchId, batch.requests)
  const messages = (storedBodies: ReadonlyArray<AppendResult>) => [...rows.rowsAdded(storedBodies), message(created)]
  return { created, rows, messages }
}

export const Live = Layer.effect(
  BatchWriter,
  Effect.gen(function* () {
    const log = yield* EventLog
    const db = yield* ReadModel
    const projector = yield* Projector
    // Captured at construction: a batch's times follow the clock the service was built with, whoever calls it.
    const clock = yield* Effect.clock
    const runtime = yield* Effect.runtime<never>()
    const metrics = yield* Metrics
    const live = new Map<string, Entry>()
    const fresh = (state: BatchState, owner: BatchOwner | undefined): Entry => ({ state, owner, outbox: [], draining: false })

    const entry = (batchId: string) =>
      Effect.gen(function* () {
        const known = live.get(batchId)
        if (known !== undefined) return known
        // Evicted or never seen since start: the read model is the state once it has applied the whole log.
        yield* projector.awaitSeq(yield* log.lastSeq)
        const again = live.get(batchId)
        if (again !== undefined) return again
        const loaded = fresh(loadBatchState(db, batchId) ?? initialState(batchId), loadBatchOwner(db, batchId))
        live.set(batchId, loaded)
        return loaded
      })

    /** Appends everything the batch's outbox holds in one call, in decision order, until it is empty. */
    const drain = (current: Entry): Effect.Effect<void> =>
      Effect.gen(function* () {
        while (current.outbox.length > 0) {
          const sending = current.outbox.splice(0)
          const exit = yield* Effect.exit(log.append(sending.flatMap((d) => d.messages)))
          let offset = 0
          for (const decision of sending) {
            const count = decision.messages.length
            const outcome = Exit.map(exit, (written) => written.slice(offset, offset + count))
            settle(decision, outcome)
            offset += count
            const stored = Exit.isSuccess(outcome) && outcome.value.some((r) => !r.duplicate)
            if (stored && decision.after !== undefined) yield* decision.after
          }
        }
        current.draining = false
        // Forgotten only once its last events are in the log: a command arriving before that would
        // reload the batch from a read model that does not have them yet.
        const { state } = current
        if (isFinal(state.status) && state.running === 0 && live.get(state.id) === current) live.delete(state.id)
      })

    const nothingWritten = Effect.map(projector.applied, (seq): Written => ({ events: [], seq }))

    /** Decide, evolve and queue the events in one synchronous step (see `decideCommand`). */
    const decideOn = (batchId: string, current: Entry, command: BatchCommand): Effect.Effect<Decided, Rejection> => {
      const decision = decide(command, current.state)
      if (Either.isLeft(decision)) return Effect.fail(decision.left)
      const events = decision.right
      if (events.length === 0) return Effect.succeed({ events, written: nothingWritten })
      const after = afterWritten(db, metrics, current.state, current.owner, events)
      const wasFinal = isFinal(current.state.status)
      current.state = events.reduce(evolve, current.state)
      const finished = !wasFinal && isFinal(current.state.status)
      const outgoing: Outgoing = { messages: events.map(message), exit: undefined, waiting: undefined, after }
      current.outbox.push(outgoing)
      if (!current.draining) {
        current.draining = true
        Runtime.runFork(runtime)(drain(current))
      }
      const written: Effect.Effect<Written, LogUnavailable> = appended(outgoing).pipe(
        Effect.matchEffect({
          onFailure: (error) => {
            // The decision is not in the log, so the state that assumed it is dropped and rebuilt from the log.
            if (live.get(batchId) === current) live.delete(batchId)
            if (error._tag === "LogUnavailable") return Effect.fail(error)
            // Another writer already wrote this lifecycle event: adopt the log's version of the batch.
            return Effect.flatMap(Effect.flatMap(log.lastSeq, projector.awaitSeq), () => nothingWritten)
          },
          onSuccess: (results) => {
            if (results.length === 0) return nothingWritten
            let seq = 0
            for (const r of results) seq = Math.max(seq, r.seq)
            return Effect.succeed({ events, seq, finished })
          },
        }),
      )
      return Effect.succeed({ events, written })
    }
    // No other command of this batch interleaves with a decision, and the log receives the batch's
    // events in the order they were decided. The append is awaited outside that step, so many rows'
    // decisions share one append.
    const decideCommand = (batchId: string, command: BatchCommand): Effect.Effect<Decided, Rejection | LogUnavailable> =>
      Effect.suspend(() => {
        const known = live.get(batchId)
        if (known !== undefined) return decideOn(batchId, known, command)
        return Effect.flatMap(entry(batchId), (current) => decideOn(batchId, current, command))
      })

    const execute = (batchId: string, command: BatchCommand) =>
      Effect.flatMap(decideCommand(batchId, command), (decided) => decided.written)

    const create = (batch: NewBatch) => {
      // Dropped once serialized: the rows' objects need not stay alive while the log stores their bytes.
      let rows: NewBatch | undefined = batch
      return Effect.gen(function* () {
        const now = yield* clock.currentTimeMillis
        const batchId = rows!.batchId ?? newBatchId()
        const { created, rows: rowMessages, messages } = createMessages(rows!, batchId, now)
        rows = undefined
        // A crash before the rows are appended leaves bodies that no batch names: never read, purged by nobody.
        const written = yield* log.append(messages(yield* appendBodies(log, rowMessages)))
        const owner = { accountId: created.account_id, models: created.models }
        live.set(batchId, fresh(evolve(initialState(batchId), created), owner))
        yield* logLifecycle(created, owner)
        return { batchId, seq: Math.max(...written.map((w) => w.seq)), createdAt: now }
      }).pipe(Effect.catchTag("WrongLastSequence", (e) => Effect.die(e)))
    }

    const phaseOf = (batchId: string, row: number) =>
      Effect.map(entry(batchId), (current) => rowPhase(current.state, row))

    return { create, execute, decide: decideCommand, now: clock.currentTimeMillis, rowPhase: phaseOf }
  }),
)
