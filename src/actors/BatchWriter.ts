import { Cause, Context, Data, Deferred, Effect, Either, Exit, FiberId, Layer, Option, Runtime, type Stream } from "effect"
import { type LaneTerms, defaultTerms } from "../domain/scheduling/ModelQueue.js"
import { randomUUID } from "node:crypto"
import { type BatchCommand, BatchNotFound, type Rejection, decide, decideCreate } from "../domain/batch/decide.js"
import { type BatchEvent, type RowEvent, isRowEvent, onceOnlyTypes } from "../domain/batch/events.js"
import type { LaneWindow } from "../domain/batch/laneWindow.js"
import { type Ending, endingIn, fateOf } from "../domain/batch/fate.js"
import { type BatchState, evolve, initialState, isClosed, isFinal, type RowPhase, rowPhase } from "../domain/batch/state.js"
import { batchMsgId, batchSubject } from "../domain/batch/subjects.js"
import { type AppendInput, type AppendResult, EventLog, isOutcomeUnknown, LogUnavailable, WrongLastSequence } from "../eventlog/EventLog.js"
import { Projector } from "../projections/Projector.js"
import { type BatchOwner, ownerOf } from "./batchState.js"
import { loadBatchFromLog } from "./batchFromLog.js"
import { type LaneHold, LeaseLost } from "./lease/LaneHold.js"
import { makeLanes } from "./lanes.js"
import { afterWritten, logLifecycle } from "./writtenHooks.js"
import { Metrics } from "../metrics/Metrics.js"
import { FateStore } from "./fate/FateStore.js"
import { appendRowGroups, appendRowsMessages, type EncodedRows, encodedMessages, type NewRow, rowsMessages } from "./rowsAdded.js"
import { type BatchEndpoint, CHAT_ENDPOINT } from "../domain/batch/endpoint.js"
import { appendSettled } from "./unknownOutcome.js"
import type { QueuedResponse } from "../domain/response/queuedResponse.js"
import { DEFAULT_PRIORITY, type Priority } from "../domain/scheduling/priority.js"

export interface NewBatch {
  readonly accountId: string
  readonly keyId: string
  readonly completionWindowMs: number
  readonly metadata: Readonly<Record<string, string>> | null
  readonly requests: ReadonlyArray<{ readonly custom_id: string; readonly model: string; readonly body: unknown }>
  /** Rows read in groups (from an uploaded file) instead of `requests`, which is then empty. */
  readonly rowSource?: RowSource
  /** Chosen by the caller when it must name the batch before it is stored (an idempotency claim). */
  readonly batchId?: string
  readonly rerunOf?: string
  /** Absent for chat completions. */
  readonly endpoint?: BatchEndpoint
  readonly inputFileId?: string
  /** A response run as this one-row batch; its id must then be a response id (src/domain/batch/subjects.ts). */
  readonly response?: QueuedResponse
  /** Absent for standard. */
  readonly priority?: Priority
}

/**
 * A batch's rows as groups to be read one after the other, or serialized already (by the thread that read
 * the create's body, for the batch it names), with what the batch event needs to know first.
 */
export type RowSource = {
  readonly total: number
  /** Each row's model, in order. */
  readonly rowModels: ReadonlyArray<string>
} & ({ readonly groups: Stream.Stream<ReadonlyArray<NewRow>, LogUnavailable> } | { readonly encoded: EncodedRows })

export interface Written {
  readonly events: ReadonlyArray<BatchEvent>
  /** The log sequence of the last event written (or the projections' current one when nothing was). */
  readonly seq: number
  /** The events made the batch final (its final status may come with a row's event). */
  readonly finished?: boolean
}

export type WriteError = LogUnavailable | LeaseLost

export interface BatchWriterShape {
  readonly create: (
    batch: NewBatch,
  ) => Effect.Effect<{ readonly batchId: string; readonly seq: number; readonly createdAt: number }, LogUnavailable>
  /**
   * Decides the command against the batch's state and writes the events. A row's command comes from
   * the model's lease owner and names the lane it writes under; a lifecycle command is decided on the
   * batch as the log holds it now, since other instances write the batch's other lanes.
   */
  readonly execute: (batchId: string, command: BatchCommand) => Effect.Effect<Written, Rejection | LogUnavailable>
  /** A row's command, written by the model's lease owner under `lane`. */
  readonly executeRow: (batchId: string, command: BatchCommand, lane: LaneHold) => Effect.Effect<Written, Rejection | WriteError>
  /**
   * `execute` in two steps: answers the decided events as soon as they are decided (and the batch's state
   * has moved on), and `written` waits for the log to hold them. A caller can act on a decision while its
   * append is on the way, as long as it awaits `written` before anything that depends on it being stored.
   */
  readonly decideRow: (batchId: string, command: BatchCommand, lane: LaneHold) => Effect.Effect<Decided, Rejection | WriteError>
  /**
   * `decideRow` without an effect, for the row path's plain code, when the writer holds the batch as it
   * is and the command decides events: undefined, having decided nothing, otherwise (the batch to be read,
   * a lost lease, a rejection, nothing to write), and `decideRow` then tells which.
   */
  readonly decideRowNow: (batchId: string, command: BatchCommand, lane: LaneHold) => DecidedNow | undefined
  readonly now: Effect.Effect<number>
  /** The row's phase as the writer knows it (the log's, after a reload). */
  readonly rowPhase: (batchId: string, row: number) => Effect.Effect<RowPhase | undefined, LogUnavailable>
  /**
   * A new owner takes the batch's lane of `lane.model`: the batch read from the log, the rows a previous
   * owner left running settled as interrupted (they run again as their next attempt), in one window
   * that is the claim. Answers the model's rows that may run, in submission order.
   */
  readonly claimLane: (batchId: string, lane: LaneHold) => Effect.Effect<Claimed, Rejection | WriteError>
  /** Another instance wrote to the batch: the next decision reads it from the log again. */
  readonly invalidate: (batchId: string) => void
  /** Waits until this writer's appends on the batch, those on their way now and those queued behind them, have ended. */
  readonly appended: (batchId: string) => Effect.Effect<void>
}

export interface Claimed {
  readonly rows: ReadonlyArray<number>
  readonly accountId: string
  /** The endpoint the batch's rows call; absent for chat completions. */
  readonly endpoint?: BatchEndpoint
  /** Its rows' priority and start-by time; the defaults for a batch whose create the log no longer holds. */
  readonly terms: LaneTerms
}

export interface Decided {
  readonly events: ReadonlyArray<BatchEvent>
  readonly written: Effect.Effect<Written, WriteError>
}

export interface DecidedNow {
  readonly events: ReadonlyArray<BatchEvent>
  /**
   * Runs `stored` once the log's append of the events has ended: with what was written, or with
   * undefined when it failed, and then `written()` fails as `decideRow`'s `written` would.
   */
  readonly whenStored: (stored: (written: Written | undefined) => void) => void
  readonly written: () => Effect.Effect<Written, WriteError>
}

/** Another writer claimed the batch's ending first: the decisions of the append are made again knowing it. */
class FateTaken extends Data.TaggedError("FateTaken")<{ readonly ending: Ending }> {}

/**
 * A decision was made on a view of the batch that assumed an append the log did not take (or not all of
 * it): it was not written, and deciding it again decides it on the batch as the log holds it.
 */
export class DecideAgain extends LogUnavailable {}

/** A decision failed because the batch ends otherwise than it assumed: deciding it again decides it knowing so. */
class EndsOtherwise extends DecideAgain {}

type AppendError = LogUnavailable | WrongLastSequence | LeaseLost | FateTaken
type AppendExit = Exit.Exit<ReadonlyArray<AppendResult>, AppendError>

/** One decision's place in the outbox: where its events go, its append's outcome once known, and whoever waits. */
interface Outgoing {
  readonly events: ReadonlyArray<BatchEvent>
  readonly lane: LaneHold | undefined
  /** A new owner's claim: its lane gets a window even when it holds no event. */
  readonly claim?: boolean
  /** The batch's ending, decided on a view where it had none: claimed (FateStore) before it is appended. */
  readonly ends?: Ending
  exit: AppendExit | undefined
  waiting: Array<(exit: AppendExit) => void> | undefined
  /** Run once the log holds the decision (logs, metrics). */
  readonly after: Effect.Effect<void> | undefined
}

interface Entry {
  state: BatchState
  /** The last decision queued on this view: the view assumes it, and every one before it, is stored. */
  last: Outgoing | undefined
  readonly owner: BatchOwner | undefined
  readonly rowModels: ReadonlyArray<string>
  readonly outbox: Array<Outgoing>
  /** Set while the outbox is being appended; done when it is empty again. */
  drained: Deferred.Deferred<void> | undefined
  /** Another instance wrote to the batch since it was read: read it again once nothing is in flight. */
  stale: boolean
  /** How another writer claimed the batch ends, when a claim of this writer's found it. */
  readonly fate: Ending | undefined
}

// Not an Effect Deferred: one is made per decision, twice a row, and making them showed in B2's CPU
// profiles; this is the same await without the allocation.
const settle = (outgoing: Outgoing, exit: AppendExit) => {
  outgoing.exit = exit
  const waiting = outgoing.waiting
  outgoing.waiting = undefined
  if (waiting !== undefined) for (const resume of waiting) resume(exit)
}
const appended = (outgoing: Outgoing): Effect.Effect<ReadonlyArray<AppendResult>, AppendError> =>
  Effect.suspend(() =>
    outgoing.exit !== undefined
      ? outgoing.exit
      : Effect.async((resume) => {
          ;(outgoing.waiting ??= []).push(resume)
        }),
  )

const lastSeqOf = (results: ReadonlyArray<AppendResult>) => {
  let seq = 0
  for (const r of results) seq = Math.max(seq, r.seq)
  return seq
}

const isClosedOrFinal = (state: BatchState) => isClosed(state) || isFinal(state.status)

/** Another writer's closing that stands for the batch (FateStore), where the batch as read has none yet. */
const standingClosing = (current: Entry): Ending | undefined =>
  !isClosedOrFinal(current.state) && current.fate !== undefined && fateOf(current.fate) !== "completed" ? current.fate : undefined

/** The ending `events` give a batch that had none (`before` them): claimed before it is appended. */
const newEnding = (before: BatchState, events: ReadonlyArray<BatchEvent>): Ending | undefined =>
  isClosedOrFinal(before) ? undefined : endingIn(events)

export const newBatchId = () => `batch_${randomUUID().replaceAll("-", "")}`

export class BatchWriter extends Context.Tag("Actors/BatchWriter")<BatchWriter, BatchWriterShape>() {}

const encoder = new TextEncoder()
const message = (event: BatchEvent): AppendInput => ({
  subject: batchSubject(event.batch_id, event.type),
  data: encoder.encode(JSON.stringify(event)),
  msgId: batchMsgId(event),
  ...(onceOnlyTypes.has(event.type) ? { expectLastSubjectSeq: 0 } : {}),
})

const createdEvent = (batch: NewBatch, batchId: string, now: number): Extract<BatchEvent, { type: "batch_created" }> => ({
  type: "batch_created",
  batch_id: batchId,
  account_id: batch.accountId,
  key_id: batch.keyId,
  created_at: now,
  expires_at: now + batch.completionWindowMs,
  completion_window: windowName(batch.completionWindowMs),
  metadata: batch.metadata === null ? null : { ...batch.metadata },
  total: batch.rowSource?.total ?? batch.requests.length,
  models: [...new Set(batch.rowSource?.rowModels ?? batch.requests.map((r) => r.model))],
  ...(batch.rerunOf === undefined ? {} : { rerun_of: batch.rerunOf }),
  ...(batch.response === undefined ? {} : { response: batch.response }),
  ...(batch.endpoint === undefined || batch.endpoint === CHAT_ENDPOINT ? {} : { endpoint: batch.endpoint }),
  ...(batch.inputFileId === undefined ? {} : { input_file_id: batch.inputFileId }),
  // Standard is left out, so that a batch created as before is stored as before.
  ...(batch.priority === undefined || batch.priority === DEFAULT_PRIORITY ? {} : { priority: batch.priority }),
})

const windowName = (ms: number) => (ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : `${Math.round(ms / 60_000)}m`)

/** Row commands are the lease owner's; the others are the batch's lifecycle, decided on the log's batch. */
const isRowCommand = (command: BatchCommand) =>
  command.type === "StartRow" || command.type === "SettleRow" || command.type === "InterruptRow"

export const Live = Layer.effect(
  BatchWriter,
  Effect.gen(function* () {
    const log = yield* EventLog
    const projector = yield* Projector
    // Captured at construction: a batch's times follow the clock the service was built with, whoever calls it.
    const clock = yield* Effect.clock
    const runtime = yield* Effect.runtime<never>()
    const metrics = yield* Metrics
    const fateStore = yield* FateStore
    /** Endings other writers claimed, learnt when a claim of this writer's was refused: a reread batch keeps them. */
    const fates = new Map<string, Ending>()
    const lanes = makeLanes()
    const live = new Map<string, Entry>()
    /** Each batch's appends on their way, whether or not their entry is still the live one. */
    const draining = new Map<string, Deferred.Deferred<void>>()

    /**
     * Appends whose outcome the log did not tell (AppendOutcomeUnknown), by batch, with the lane each
     * window was written under: nothing is decided on the batch again until they are sent again and
     * answered, stored or refused, by the stream's leader (see `settleUnsure`).
     */
    const unsure = new Map<string, Array<{ readonly input: AppendInput; readonly lane: LaneHold | undefined }>>()
    const remembered = (batchId: string, inputs: ReadonlyArray<AppendInput>, holds: ReadonlyMap<string, LaneHold>) =>
      <A, E>(append: Effect.Effect<A, E>) =>
        Effect.tapError(append, (e) =>
          Effect.sync(() => {
            if (!isOutcomeUnknown(e)) return
            const pending = unsure.get(batchId) ?? []
            for (const input of inputs) pending.push({ input, lane: holds.get(input.subject) })
            unsure.set(batchId, pending)
          }),
        )

    /**
     * The appends of the batch whose outcome was unknown, sent again as they were: the same ids and expected
     * sequences, so the leader answers a stored one as a duplicate (or, past its duplicate window, refuses
     * it as out of place) and stores one it never had. Only then is the batch read and decided on: a
     * read alone could come from a leader cut off from its cluster, which holds what the others never
     * stored. A window whose lease has lapsed is not sent late (fencing): the lane's next owner reads the log.
     */
    const settleUnsure = (batchId: string): Effect.Effect<void, LogUnavailable> =>
      Effect.suspend(() => {
        const pending = unsure.get(batchId)
        if (pending === undefined) return Effect.void
        const again = pending.filter((p) => p.lane === undefined || p.lane.valid()).map((p) => p.input)
        const resend: Effect.Effect<unknown, LogUnavailable | WrongLastSequence> = again.length === 0 ? Effect.void : log.append(again)
        return resend.pipe(
          // Out of place: the log holds another message there (or ours, from past the duplicate window). The batch read says which.
          Effect.catchTag("WrongLastSequence", () => Effect.void),
          Effect.tap(() =>
            Effect.sync(() => {
              if (unsure.get(batchId) === pending) unsure.delete(batchId)
            }),
          ),
          Effect.asVoid,
        )
      })

    /** Reads in progress, by batch: every caller that needs the batch meanwhile waits for the same read. */
    const loads = new Map<string, Deferred.Deferred<Entry, LogUnavailable>>()

    /**
     * Reads the batch from the log again. From this moment until the read is done no decision is made on
     * it: a decision on the entry being replaced would be lost to the new one, and decided again. The read
     * starts once the replaced entry's appends are done: one still on its way when the read passed would
     * be in the log but not in the batch read, and a row it started would never be settled.
     */
    const load = (batchId: string): Effect.Effect<Entry, LogUnavailable> =>
      Effect.suspend(() => {
        const reading = loads.get(batchId)
        if (reading !== undefined) return Deferred.await(reading)
        const done = Deferred.unsafeMake<Entry, LogUnavailable>(FiberId.none)
        loads.set(batchId, done)
        const appending = draining.get(batchId)
        live.delete(batchId)
        // The read is the writer's, not its first caller's: on a fiber of its own, so a caller interrupted
        // meanwhile (an actor stopped as its lease is lost) cannot leave the batch's read pending for good.
        const read = Effect.zipRight(settleUnsure(batchId), loadBatchFromLog(log, batchId))
        Runtime.runFork(runtime)(
          (appending === undefined ? read : Effect.zipRight(Deferred.await(appending), read)).pipe(
            Effect.map(({ state, owner, rowModels, tips }): Entry => {
              lanes.learn(batchId, owner?.models ?? [], tips)
              const loaded: Entry = { state, last: undefined, owner, rowModels, outbox: [], drained: undefined, stale: false, fate: fates.get(batchId) }
              live.set(batchId, loaded)
              return loaded
            }),
            Effect.exit,
            Effect.flatMap((exit) =>
              Effect.suspend(() => {
                loads.delete(batchId)
                return Deferred.done(done, exit)
              }),
            ),
          ),
        )
        return Deferred.await(done)
      })

    const entry = (batchId: string): Effect.Effect<Entry, LogUnavailable> =>
      Effect.suspend(() => {
        const reading = loads.get(batchId)
        if (reading !== undefined) return Deferred.await(reading)
        const known = live.get(batchId)
        if (known !== undefined && !(known.stale && known.drained === undefined)) return Effect.succeed(known)
        return load(batchId)
      })

    /** The batch as the log holds it, once this instance's own decisions on it are stored. */
    const fresh = (batchId: string): Effect.Effect<Entry, LogUnavailable> =>
      Effect.suspend(() => {
        const reading = loads.get(batchId)
        if (reading !== undefined) return Deferred.await(reading)
        const known = live.get(batchId)
        if (known?.drained !== undefined) return Effect.flatMap(Deferred.await(known.drained), () => fresh(batchId))
        return load(batchId)
      })

    /** The messages of one append: lifecycle events as they are, each lane's row events in one window. */
    const messagesOf = (batchId: string, sending: ReadonlyArray<Outgoing>) =>
      Effect.gen(function* () {
        const messages: Array<AppendInput | { readonly lane: LaneHold; readonly events: Array<RowEvent> }> = []
        // A decision's messages, in order, each once: nearly always one (its lane's window).
        const placeOf = new Map<Outgoing, Array<number>>()
        const windows = new Map<string, number>()
        /** The `batch_completed` messages that end the batch from a view where it had no ending. */
        const completions = new Set<number>()
        for (const decision of sending) {
          const places: Array<number> = []
          for (const event of decision.events) {
            if (isRowEvent(event)) {
              const lane = decision.lane!
              let at = windows.get(lane.model)
              if (at === undefined) {
                at = messages.push({ lane, events: [] }) - 1
                windows.set(lane.model, at)
              }
              ;(messages[at] as { events: Array<RowEvent> }).events.push(event)
              if (!places.includes(at)) places.push(at)
            } else {
              const at = messages.push(message(event)) - 1
              if (event === decision.ends && event.type === "batch_completed") completions.add(at)
              if (!places.includes(at)) places.push(at)
            }
          }
          if (decision.claim === true && decision.lane !== undefined && !windows.has(decision.lane.model)) {
            const at = messages.push({ lane: decision.lane, events: [] }) - 1
            windows.set(decision.lane.model, at)
            if (!places.includes(at)) places.push(at)
          }
          placeOf.set(decision, places)
        }
        const inputs: Array<AppendInput> = []
        const holds = new Map<string, LaneHold>()
        const encoded = new Map<AppendInput, LaneWindow>()
        for (const m of messages) {
          if ("subject" in m) {
            inputs.push(m)
            continue
          }
          const made = lanes.window(batchId, m.lane, m.events)
          if (made instanceof LeaseLost) return yield* Effect.fail(made)
          const { input } = made
          holds.set(input.subject, m.lane)
          encoded.set(input, made.window)
          inputs.push(input)
        }
        return { inputs, placeOf, holds, completions, encoded }
      })

    /**
     * Claims the closings of `sending` that end the batch from a view where it had no ending (FateStore):
     * the append goes no further if another writer's ending stands.
     */
    const claimClosings = (batchId: string, sending: ReadonlyArray<Outgoing>) => {
      // Most appends claim nothing (row events alone): no effect per decision for them, two a row otherwise.
      const closings = sending.filter((decision) => decision.ends !== undefined && decision.ends.type !== "batch_completed")
      return closings.length === 0
        ? Effect.void
        : Effect.forEach(
            closings,
            (decision) =>
              Effect.flatMap(fateStore.claim(batchId, decision.ends!), (standing) =>
                fateOf(standing) === fateOf(decision.ends!) ? Effect.void : Effect.fail(new FateTaken({ ending: standing })),
              ),
            { discard: true },
          )
    }

    /**
     * Appends the batch's completions after the rest, once claimed: a completion is claimed only once the
     * log holds every row's settle, so that whoever finds it claimed may write it at any place after. One
     * not claimed (another writer's ending stands, or the log is away) is left out, and the batch is read
     * again before its next decision: the final event then comes from the writer that finds every row
     * settled (the Dispatcher's reconciliation), as the ending that stands says.
     */
    const appendCompletions = (
      batchId: string,
      current: Entry,
      completions: ReadonlyArray<AppendInput>,
      ending: Ending,
    ): Effect.Effect<ReadonlyArray<AppendResult | undefined>> => {
      const noLanes = new Map<string, LaneHold>()
      const leftOut = Effect.sync(() => {
        current.stale = true
        return completions.map(() => undefined)
      })
      return fateStore.claim(batchId, ending).pipe(
        Effect.flatMap((standing): Effect.Effect<ReadonlyArray<AppendResult | undefined>, LogUnavailable | WrongLastSequence> => {
          if (fateOf(standing) === "completed") return log.append(completions).pipe(remembered(batchId, completions, noLanes))
          fates.set(batchId, standing)
          return leftOut
        }),
        Effect.catchAll(() => leftOut),
      )
    }

    /**
     * What the log stored of an append: each lane stands at its window, and the projections get the windows
     * as encoded, which they apply without decoding their bytes again.
     */
    const onStored = (
      holds: ReadonlyMap<string, LaneHold>,
      encoded: ReadonlyMap<AppendInput, LaneWindow>,
      inputs: ReadonlyArray<AppendInput>,
      written: ReadonlyArray<AppendResult>,
    ) => {
      lanes.stored(holds, inputs, written)
      for (let i = 0; i < inputs.length; i++) {
        const window = encoded.get(inputs[i]!)
        const result = written[i]
        if (window !== undefined && result !== undefined && !result.duplicate) projector.wrote(result.seq, inputs[i]!.subject, window)
      }
    }

    /** Appends everything the batch's outbox holds in one call, in decision order, until it is empty. */
    const drain = (batchId: string, current: Entry): Effect.Effect<void> =>
      Effect.gen(function* () {
        while (current.outbox.length > 0) {
          const sending = current.outbox.splice(0)
          const exit: Exit.Exit<
            { readonly written: ReadonlyArray<AppendResult | undefined>; readonly placeOf: Map<Outgoing, Array<number>> },
            AppendError
          > = yield* Effect.exit(
            Effect.gen(function* () {
              const { inputs, placeOf, holds, completions, encoded } = yield* messagesOf(batchId, sending)
              yield* claimClosings(batchId, sending)
              if (completions.size === 0) {
                const written = yield* log.append(inputs).pipe(remembered(batchId, inputs, holds))
                onStored(holds, encoded, inputs, written)
                return { written, placeOf }
              }
              const rest = inputs.filter((_, i) => !completions.has(i))
              const stored = yield* log.append(rest).pipe(remembered(batchId, rest, holds))
              onStored(holds, encoded, rest, stored)
              const ending = sending.find((d) => d.ends?.type === "batch_completed")!.ends!
              const completed = yield* appendCompletions(batchId, current, inputs.filter((_, i) => completions.has(i)), ending)
              const written: Array<AppendResult | undefined> = []
              let r = 0
              let c = 0
              inputs.forEach((_, i) => written.push(completions.has(i) ? completed[c++] : stored[r++]))
              return { written, placeOf }
            }),
          )
          // Decisions queued behind a failed append were made on a state that assumed it: they fail with it,
          // and one refused as out of place fails as not written: the refusal was of another decision's message.
          const behind = Exit.isFailure(exit) ? current.outbox.splice(0) : []
          if (Exit.isFailure(exit)) {
            // Whatever waits on them or not, the next decision on the batch is made on the log's batch.
            if (live.get(batchId) === current) live.delete(batchId)
            const notSent: AppendExit = Exit.fail(new DecideAgain({ message: `batch ${batchId}: decided behind an append the log refused` }))
            const refused = Option.exists(Cause.failureOption(exit.cause), (e) => e._tag === "WrongLastSequence")
            for (const decision of behind) settle(decision, refused ? notSent : Exit.failCause(exit.cause))
          }
          for (const decision of sending) {
            const outcome: AppendExit = Exit.isFailure(exit)
              ? Exit.failCause(exit.cause)
              : Exit.succeed(
                  (exit.value.placeOf.get(decision) ?? []).flatMap((i) => (exit.value.written[i] === undefined ? [] : [exit.value.written[i]!])),
                )
            settle(decision, outcome)
            const stored = Exit.isSuccess(outcome) && outcome.value.some((r) => !r.duplicate)
            if (stored && decision.after !== undefined) yield* decision.after
          }
        }
        const done = current.drained
        current.drained = undefined
        if (done !== undefined) {
          if (draining.get(batchId) === done) draining.delete(batchId)
          yield* Deferred.succeed(done, undefined)
        }
        // Forgotten only once its last events are in the log.
        const { state } = current
        if (isFinal(state.status) && state.running === 0 && live.get(state.id) === current) live.delete(state.id)
      })

    /** The entry's outbox is appended unless an append of it is already on its way (which takes it too). */
    const startDrain = (batchId: string, current: Entry) => {
      if (current.drained !== undefined) return
      current.drained = Deferred.unsafeMake<void>(FiberId.none)
      draining.set(batchId, current.drained)
      Runtime.runFork(runtime)(drain(batchId, current))
    }

    /** Another writer's ending stands: the batch is read again, and the decision made again knowing it. */
    const endsOtherwise = (batchId: string, taken: FateTaken) => {
      fates.set(batchId, taken.ending)
      return Effect.flatMap(load(batchId), () =>
        Effect.fail(new EndsOtherwise({ message: `batch ${batchId} ends as ${fateOf(taken.ending)}, as another writer claimed: decided again` })),
      )
    }

    const nothingWritten = Effect.map(projector.applied, (seq): Written => ({ events: [], seq }))

    /**
     * What a decision of no events was decided on: the view's decisions still on their way (the last one
     * stands for all, since one that fails fails every one queued behind it). Nothing decided on a view the
     * log did not take stands: the decision is made again on the log's batch.
     */
    const assumed = (batchId: string, current: Entry): Effect.Effect<Written, DecideAgain> => {
      const last = current.last
      if (last === undefined || (last.exit !== undefined && Exit.isSuccess(last.exit))) return nothingWritten
      return Effect.matchEffect(appended(last), {
        onFailure: () => Effect.fail(new DecideAgain({ message: `batch ${batchId}: decided on a view the log did not take` })),
        onSuccess: () => nothingWritten,
      })
    }

    /** Evolves the batch by decided events and queues them for the log: the synchronous step of a decision. */
    const queue = (batchId: string, current: Entry, events: ReadonlyArray<BatchEvent>, lane: LaneHold | undefined, fate: Ending | undefined) => {
      const after = afterWritten(current.rowModels, metrics, current.state, current.owner, events)
      const wasFinal = isFinal(current.state.status)
      const ends = fate === undefined ? newEnding(current.state, events) : undefined
      current.state = events.reduce(evolve, current.state)
      const finished = !wasFinal && isFinal(current.state.status)
      const outgoing: Outgoing = { events, lane, ends, exit: undefined, waiting: undefined, after }
      current.outbox.push(outgoing)
      current.last = outgoing
      startDrain(batchId, current)
      return { outgoing, finished }
    }

    /** What the log's append of a queued decision gives its caller (see `decideOn`). */
    const writtenOf = (batchId: string, current: Entry, outgoing: Outgoing, lane: LaneHold | undefined, finished: boolean): Effect.Effect<Written, WriteError> => {
      const { events } = outgoing
      return appended(outgoing).pipe(
        Effect.matchEffect({
          onFailure: (error) => {
            // The decision is not in the log, so the state that assumed it is dropped and rebuilt from the log.
            if (live.get(batchId) === current) live.delete(batchId)
            if (error._tag === "LogUnavailable" || error._tag === "LeaseLost") return Effect.fail(error)
            if (error._tag === "FateTaken") return endsOtherwise(batchId, error)
            // Another writer already wrote this decision's lifecycle event: adopt the log's version of the batch.
            if (!events.some(isRowEvent) && events.some((e) => batchSubject(e.batch_id, e.type) === error.subject)) {
              return Effect.flatMap(Effect.flatMap(log.lastSeq, projector.awaitSeq), () => nothingWritten)
            }
            // Refused on the lane: another lease wrote it since (this one is lost), or a window of this lease
            // whose acknowledgement was lost. Or another message of the append was refused (a lifecycle event
            // another writer wrote first), which says nothing of this decision's own: the append reports one
            // refusal. Either way the decision is made again on the log's batch.
            return Effect.flatMap(load(batchId), () =>
              Effect.fail(
                (lane === undefined ? undefined : lanes.verdict(batchId, lane)) ??
                  new DecideAgain({ message: `${error.subject} moved on: read again` }),
              ),
            )
          },
          onSuccess: (results) => (results.length === 0 ? nothingWritten : Effect.succeed({ events, seq: lastSeqOf(results), finished })),
        }),
      )
    }

    /**
     * The command decided on the batch as this writer holds it. Another writer's closing stands for the
     * batch, and the log may not hold it yet: it goes first, as it was claimed (the log stores it once,
     * whoever appends it), and the command is decided after it.
     */
    const decideHere = (current: Entry, command: BatchCommand) => {
      const fate = standingClosing(current)
      return Either.map(decide(command, fate === undefined ? current.state : evolve(current.state, fate)), (decided) => ({
        fate,
        decided,
        events: fate === undefined ? decided : [fate, ...decided],
      }))
    }

    /** Decide, evolve and queue the events in one synchronous step (see `decideCommand`). */
    const decideOn = (
      batchId: string,
      current: Entry,
      command: BatchCommand,
      lane: LaneHold | undefined,
    ): Effect.Effect<Decided, Rejection | WriteError> => {
      if (lane !== undefined && !lane.valid()) return Effect.fail(new LeaseLost({ model: lane.model, reason: "the lease was not renewed in time" }))
      // Replaced (read again) since the caller got it: decided on the batch as it is now instead.
      if (live.get(batchId) !== current) return decideCommand(batchId, command, lane)
      const decision = decideHere(current, command)
      if (Either.isLeft(decision)) return Effect.fail(decision.left)
      const { fate, events } = decision.right
      if (events.length === 0) return Effect.succeed({ events, written: assumed(batchId, current) })
      if (lane === undefined && events.some(isRowEvent)) return Effect.die(new Error(`row events of ${batchId} decided without a lane`))
      const { outgoing, finished } = queue(batchId, current, events, lane, fate)
      return Effect.succeed({ events, written: writtenOf(batchId, current, outgoing, lane, finished) })
    }

    const decideRowNow = (batchId: string, command: BatchCommand, lane: LaneHold): DecidedNow | undefined => {
      const current = loads.has(batchId) ? undefined : live.get(batchId)
      if (current === undefined || current.stale || !lane.valid()) return undefined
      const decision = decideHere(current, command)
      if (Either.isLeft(decision) || decision.right.decided.length === 0) return undefined
      const { fate, events } = decision.right
      const { outgoing, finished } = queue(batchId, current, events, lane, fate)
      const whenStored = (stored: (written: Written | undefined) => void) => {
        const ended = (exit: AppendExit) =>
          stored(Exit.isSuccess(exit) && exit.value.length > 0 ? { events, seq: lastSeqOf(exit.value), finished } : undefined)
        if (outgoing.exit !== undefined) ended(outgoing.exit)
        else (outgoing.waiting ??= []).push(ended)
      }
      return { events, whenStored, written: () => writtenOf(batchId, current, outgoing, lane, finished) }
    }
    // No other command of this batch interleaves with a decision, and the log receives the batch's
    // events in the order they were decided. The append is awaited outside that step, so many rows'
    // decisions share one append.
    const decideCommand = (batchId: string, command: BatchCommand, lane?: LaneHold): Effect.Effect<Decided, Rejection | WriteError> =>
      Effect.suspend(() => {
        if (!isRowCommand(command)) return Effect.flatMap(fresh(batchId), (current) => decideOn(batchId, current, command, lane))
        const known = loads.has(batchId) ? undefined : live.get(batchId)
        if (known !== undefined && !known.stale) return decideOn(batchId, known, command, lane)
        return Effect.flatMap(entry(batchId), (current) => decideOn(batchId, current, command, lane))
      })

    const executeRow = (batchId: string, command: BatchCommand, lane: LaneHold) =>
      Effect.flatMap(decideCommand(batchId, command, lane), (decided) => decided.written)
    // Without a lane, nothing is written under a lease: a lease cannot be lost.
    const execute = (batchId: string, command: BatchCommand) =>
      Effect.catchTag(executeRow(batchId, command, undefined as unknown as LaneHold), "LeaseLost", (e) => Effect.die(e)).pipe(
        // Decided again on the batch as the log holds it (with the ending that stands): consistent with it.
        Effect.retry({ while: (e) => e instanceof DecideAgain, times: 3 }),
      )

    const create = (batch: NewBatch) => {
      // Dropped once serialized: the rows' objects need not stay alive while the log stores their bytes.
      let rows: NewBatch | undefined = batch
      return Effect.gen(function* () {
        const now = yield* clock.currentTimeMillis
        const batchId = rows!.batchId ?? newBatchId()
        const created = createdEvent(rows!, batchId, now)
        const events = yield* Either.match(decideCreate(created, initialState(batchId)), {
          onLeft: (e) => Effect.die(e),
          onRight: Effect.succeed,
        })
        const source = rows!.rowSource
        if (source !== undefined && "encoded" in source && source.encoded.batchId !== batchId)
          return yield* Effect.dieMessage(`rows serialized for ${source.encoded.batchId} were given to ${batchId}`)
        const appendRows =
          source !== undefined && "groups" in source
            ? appendRowGroups(log, batchId, source.groups)
            : appendRowsMessages(log, source === undefined ? rowsMessages(batchId, rows!.requests) : encodedMessages(source.encoded))
        const rowModels = source?.rowModels ?? rows!.requests.map((r) => r.model)
        rows = undefined
        // The rows go first so that a reader never sees a created batch without its rows. A crash before
        // they are appended leaves bodies that no batch names: never read, purged by nobody.
        const added = yield* appendRows
        const written = yield* appendSettled(log, [...added, ...events.map(message)])
        const owner = ownerOf(created)
        live.set(batchId, {
          state: events.reduce(evolve, initialState(batchId)),
          last: undefined,
          owner,
          rowModels,
          outbox: [],
          drained: undefined,
          stale: false,
          fate: undefined,
        })
        yield* logLifecycle(created, owner)
        return { batchId, seq: Math.max(...written.map((w) => w.seq)), createdAt: now }
      }).pipe(Effect.catchTag("WrongLastSequence", (e) => Effect.die(e)))
    }

    const phaseOf = (batchId: string, row: number) => Effect.map(entry(batchId), (current) => rowPhase(current.state, row))

    const claimLane = (batchId: string, lane: LaneHold): Effect.Effect<Claimed, Rejection | WriteError> =>
      Effect.gen(function* () {
        const current = yield* fresh(batchId)
        if (!current.state.exists || current.state.deleted) return yield* Effect.fail(new BatchNotFound({ batchId }))
        const lost = lanes.verdict(batchId, lane)
        if (lost !== undefined) return yield* Effect.fail(lost)
        const mine: Array<number> = []
        current.rowModels.forEach((model, row) => {
          if (model === lane.model) mine.push(row)
        })
        const at = clock.unsafeCurrentTimeMillis()
        // The rows a previous owner left running are settled in the claim's own window, after the closing
        // another writer claimed, if the log does not hold it yet (see decideOn).
        const interrupted: Array<BatchEvent> = []
        const before = current.state
        const fate = standingClosing(current)
        if (fate !== undefined) {
          interrupted.push(fate)
          current.state = evolve(current.state, fate)
        }
        if (!isFinal(current.state.status)) {
          for (const row of mine) {
            if (rowPhase(current.state, row)?.status !== "running") continue
            const decision = decide({ type: "InterruptRow", row, at }, current.state)
            if (Either.isRight(decision)) {
              interrupted.push(...decision.right)
              current.state = decision.right.reduce(evolve, current.state)
            }
          }
        }
        const ends = fate === undefined ? newEnding(before, interrupted) : undefined
        const outgoing: Outgoing = { events: interrupted, lane, claim: true, ends, exit: undefined, waiting: undefined, after: undefined }
        current.outbox.push(outgoing)
        current.last = outgoing
        startDrain(batchId, current)
        const claimed = yield* Effect.either(appended(outgoing))
        if (Either.isLeft(claimed)) {
          if (live.get(batchId) === current) live.delete(batchId)
          const error = claimed.left
          if (error._tag === "FateTaken") return yield* endsOtherwise(batchId, error)
          if (error._tag !== "WrongLastSequence") return yield* Effect.fail(error)
          // Someone wrote the batch while it was read: read it again and claim from there.
          yield* load(batchId)
          return yield* Effect.fail(lanes.verdict(batchId, lane) ?? new LogUnavailable({ message: `${error.subject} moved on while it was claimed` }))
        }
        const rows = isClosedOrFinal(current.state)
          ? []
          : mine.filter((row) => {
              const phase = rowPhase(current.state, row)
              return phase === undefined || phase.status === "queued"
            })
        const owner = current.owner
        const terms = owner === undefined ? defaultTerms : { priority: owner.priority, startBy: owner.startBy }
        const mayRun: Claimed = { rows, accountId: owner?.accountId ?? "", terms }
        return owner?.endpoint === undefined ? mayRun : { ...mayRun, endpoint: owner.endpoint }
      })

    return {
      appended: (batchId: string) =>
        Effect.suspend(() => {
          const drained = draining.get(batchId)
          return drained === undefined ? Effect.void : Deferred.await(drained)
        }),
      create,
      execute,
      executeRow,
      decideRow: decideCommand,
      decideRowNow,
      now: clock.currentTimeMillis,
      rowPhase: phaseOf,
      claimLane,
      invalidate: (batchId: string) => {
        const known = live.get(batchId)
        if (known !== undefined) known.stale = true
      },
    }
  }),
)

export { LeaseLost, WrongLastSequence }
