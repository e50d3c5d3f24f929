import { Effect, FiberSet, Random } from "effect"
import { randomUUID } from "node:crypto"
import { type ModelEntry, costUsd } from "../config/Catalog.js"
import type { BatchCommand, Rejection, RowOutcome } from "../domain/batch/decide.js"
import type { BatchEndpoint } from "../domain/batch/endpoint.js"
import { type RowRequest, responsesRowResult, rowRequest } from "../domain/batch/rowCall.js"
import type { BatchEvent } from "../domain/batch/events.js"
import { rowOutcome } from "../domain/upstream/rowOutcome.js"
import { classifyUpstream } from "../domain/upstream/classifyUpstream.js"
import type { UpstreamOutcome } from "../domain/upstream/UpstreamOutcome.js"
import type { EventLogShape } from "../eventlog/EventLog.js"
import type { ResultReads } from "../projections/resultReads.js"
import type { BatchWriterShape, Decided, DecidedNow, WriteError, Written } from "./BatchWriter.js"
import type { LaneHold, LeaseLost } from "./lease/LaneHold.js"
import type { AdmissionShape } from "./Admission.js"
import type { ModelLoadShape } from "./ModelLoad.js"
import { makeBodyCache } from "./bodyCache.js"
import { isUnavailable, whileLogUnavailable } from "./logRetry.js"
import { type TakenRow, makeModelSlots } from "./model/modelSlots.js"
import type { LaneTerms } from "../domain/scheduling/ModelQueue.js"
import { Priorities, type Priority } from "../domain/scheduling/priority.js"
import { makeUpstreamCaller } from "./upstreamCall.js"
import { type MetricsShape, type ModelSnapshot, answerLabel } from "../metrics/Metrics.js"
import { type ModelSample, type ModelState, nextModelState } from "../domain/waiting/modelState.js"

export interface ModelActor {
  readonly model: ModelEntry
  /** `first` with the batch's first rows (a retry's enqueue keeps what it said). */
  readonly enqueue: (accountId: string, batchId: string, rows: ReadonlyArray<number>, first?: FirstEnqueue) => void
  readonly drop: (batchId: string) => void
  /** Shutdown has begun: no row starts from now on; the running ones go on to finish. */
  readonly stopTaking: () => void
  /** The lease is lost: no row starts, and shutdown does not wait for the running ones (they cannot be written). */
  readonly abandon: () => void
  readonly inFlight: () => number
  readonly queued: () => number
  readonly snapshot: () => ModelSnapshot
  /** The facts its queued rows wait on now, each with when it began: published with the lease (domain/waiting). */
  readonly waitState: () => ModelState
}

export interface FirstEnqueue {
  /** When the batch was created (ms): times the rows' first starts. */
  readonly createdAt: number
  /** The batch's when it is not chat completions: kept until the batch is dropped. */
  readonly endpoint?: BatchEndpoint
  readonly terms: LaneTerms
}

const SHUTDOWN_GRACE_MS = 30_000
/** Batches whose create time is kept for their rows' first starts; the oldest is forgotten first. */
const CREATED_AT_LIMIT = 10_000

/** A batch whose rows call another endpoint than chat completions, and when it was created (a Response's `created_at`). */
interface Route {
  readonly endpoint: BatchEndpoint
  readonly createdAt: number
}

/**
 * One model's actor, run by the holder of its lease: it takes rows in turn from its slots
 * (model/modelSlots.ts) as they free, and runs each through its attempt: the start decided and appended in the
 * lease's lane, the upstream call, the answer's outcome (domain/upstream/rowOutcome.ts) settled, a
 * retry slept until due. On shutdown it stops taking rows and lets the running ones finish.
 */
export const makeModelActor = (
  model: ModelEntry,
  writer: BatchWriterShape,
  results: ResultReads,
  log: EventLogShape,
  admission: AdmissionShape,
  load: ModelLoadShape,
  metrics: MetricsShape,
  lane: LaneHold,
  onLost: (lost: LeaseLost) => void,
) =>
  Effect.gen(function* () {
    // The actors' clock (the writer's too), read without an effect: the row path reads it twice a row.
    const clock = yield* Effect.clock
    const bodies = makeBodyCache(results, log)
    const upstream = yield* makeUpstreamCaller(model)
    const slots = yield* makeModelSlots(model, load, admission, upstream, () => clock.unsafeCurrentTimeMillis())
    let abandoned = false
    const createdAt = new Map<string, number>()
    // Only the batches that need one: a chat row's path looks no further than a miss here.
    const routes = new Map<string, Route>()
    /** Rows sleeping until their retry, by account and by priority: queued, though not in the queue. */
    const retrying = new Map<string, number>()
    const retryingByPriority = new Map<Priority, number>()
    const bump = <K>(counts: Map<K, number>, key: K, by: number) => {
      const n = (counts.get(key) ?? 0) + by
      if (n > 0) counts.set(key, n)
      else counts.delete(key)
    }
    const bumpRetrying = (accountId: string, priority: Priority, by: number) => {
      bump(retrying, accountId, by)
      bump(retryingByPriority, priority, by)
    }
    const enqueue = (accountId: string, batchId: string, rows: ReadonlyArray<number>, first?: FirstEnqueue) => {
      if (first !== undefined) {
        if (createdAt.size >= CREATED_AT_LIMIT) createdAt.delete(createdAt.keys().next().value!)
        createdAt.set(batchId, first.createdAt)
        if (first.endpoint !== undefined && first.endpoint !== "/v1/chat/completions") {
          routes.set(batchId, { endpoint: first.endpoint, createdAt: first.createdAt })
        }
      }
      slots.push(accountId, batchId, rows, first?.terms)
    }

    const costOf = (usage: unknown) => costUsd(model, usage)
    type Answered = { readonly at: number; readonly outcome: RowOutcome; readonly reason: string }
    const onAnswered = (freeSlot: () => void) => (answer: UpstreamOutcome, seconds: number) => {
      metrics.upstreamAnswered(model.id, answerLabel(answer), seconds)
      // Pushback cuts the slots before this one is given back.
      load.observe(model, answer._tag === "Response" ? answer.status : undefined, answer._tag === "Response" ? answer.retryAfterMs : undefined)
      freeSlot()
    }
    /** An answer's outcome; `random` draws the backoff's jitter (a retry's). */
    const answered = (attempt: number, answer: UpstreamOutcome, random: number, route?: Route, request?: Extract<RowRequest, { _tag: "Send" }>): Answered => {
      const at = clock.unsafeCurrentTimeMillis()
      const requestId = `req_${randomUUID().replaceAll("-", "")}`
      const responses = request?.responses
      const resultBody =
        responses === undefined || route === undefined
          ? undefined
          : (completion: unknown) => responsesRowResult(responses, completion, { requestId, model: model.id, createdAt: route.createdAt, completedAt: at })
      return { at, reason: answerLabel(answer), outcome: rowOutcome(answer, { attempt, at, random, requestId, costOf, resultBody }) }
    }
    // The jitter comes from the runtime's Random, which tests may seed.
    const answeredOf = (attempt: number, answer: UpstreamOutcome, route?: Route, request?: Extract<RowRequest, { _tag: "Send" }>) =>
      Effect.map(Random.next, (random) => answered(attempt, answer, random, route, request))
    /** The outcome of one attempt; `route` and `request`, for a row of another endpoint than chat completions. */
    const outcomeOf = (attempt: number, body: string, freeSlot: () => void, route?: Route, request?: Extract<RowRequest, { _tag: "Send" }>) => {
      metrics.attempt(model.id)
      return Effect.flatMap(upstream.call(request?.body ?? body, onAnswered(freeSlot), lane.validThrough(), request?.path), (answer) =>
        answeredOf(attempt, answer, route, request),
      )
    }

    /** A row of another endpoint than chat completions: its call, or its failure when its stored body cannot be sent. */
    const routedOutcome = (attempt: number, body: string, freeSlot: () => void, route: Route): Effect.Effect<Answered> => {
      const request = rowRequest(route.endpoint, body)
      if (request._tag === "Send") return outcomeOf(attempt, body, freeSlot, route, request)
      freeSlot()
      return Effect.sync(() => ({ at: clock.unsafeCurrentTimeMillis(), reason: "refused", outcome: { _tag: "Permanent", error: request.error } }))
    }

    // Counted once the log holds the settle: a decision retried after a failed append is counted then.
    const countSettled = (events: ReadonlyArray<BatchEvent>, reason: string) => {
      for (const e of events) {
        if (e.type === "row_completed") metrics.rowSettled(model.id, "completed")
        else if (e.type === "row_failed") metrics.rowSettled(model.id, "failed", e.error.code)
        else if (e.type === "row_cancelled") metrics.rowSettled(model.id, "cancelled")
        else if (e.type === "row_retrying") metrics.retry(model.id, reason)
      }
    }

    // Deciding a command twice gives the same events with the same message ids, which the log stores once.
    const write = (batchId: string, command: BatchCommand & { readonly row: number }) =>
      whileLogUnavailable(
        writer.executeRow(batchId, command, lane),
        (e) => `row ${command.row} of ${batchId} waits for the event log: ${e.message}`,
      )

    // Deciding a start can need the log: a batch whose state the writer dropped is loaded from it again.
    // Events that are not a start (the batch closing) are awaited here: if the log did not take them, the
    // writer holds the log's state of the batch by the time the start is decided again.
    const decideStart = (batchId: string, row: number) =>
      whileLogUnavailable(
        Effect.suspend(() => writer.decideRow(batchId, { type: "StartRow", row, at: clock.unsafeCurrentTimeMillis() }, lane)).pipe(
          Effect.flatMap((decided) =>
            decided.events.some((e) => e.type === "row_started") ? Effect.succeed(decided) : Effect.as(decided.written, decided),
          ),
        ),
        (e) => `row ${row} of ${batchId} waits for the event log to start: ${e.message}`,
      )

    const bodyOf = (batchId: string, row: number) =>
      whileLogUnavailable(
        bodies.take(batchId, row),
        (e) => `row ${row} of ${batchId} waits for the event log to read its body: ${e.message}`,
      )

    /** The row's attempt once its start is in the log, or undefined when it no longer runs. */
    const startWritten = (batchId: string, row: number, decided: Decided, attempt: number) =>
      Effect.matchEffect(decided.written, {
        onSuccess: () => Effect.succeed<number | undefined>(attempt),
        // The start's append failed: the writer has dropped its state for the log's. Deciding the start
        // again gives the same event (stored once), or nothing if the lost ack hid a stored one.
        onFailure: () =>
          Effect.gen(function* () {
            const again = yield* write(batchId, { type: "StartRow", row, at: clock.unsafeCurrentTimeMillis() })
            const start = again.events.find((e) => e.type === "row_started")
            if (start?.type === "row_started") return start.attempt
            const phase = yield* whileLogUnavailable(
              writer.rowPhase(batchId, row),
              (e) => `row ${row} of ${batchId} waits for the event log to settle: ${e.message}`,
            )
            return phase?.status === "running" ? phase.attempt : undefined
          }),
      })

    type Started = Extract<BatchEvent, { type: "row_started" }>
    const startOf = (events: ReadonlyArray<BatchEvent>) => events.find((e): e is Started => e.type === "row_started")
    const counted = ({ batchId, priority, early }: TakenRow, start: Started) => {
      metrics.rowStarted(model.id, priority, early)
      const created = start.attempt === 1 ? createdAt.get(batchId) : undefined
      if (created !== undefined) metrics.firstStart(model.id, (start.at - created) / 1000)
    }

    /** What a settle's stored events leave to do: count them, and sleep a retry until it is due. */
    const settled = ({ accountId, batchId, row, priority }: TakenRow, events: ReadonlyArray<BatchEvent>, { at, reason }: Answered) => {
      countSettled(events, reason)
      const retry = events.find((e) => e.type === "row_retrying")
      if (retry === undefined || retry.type !== "row_retrying") return
      bumpRetrying(accountId, priority, 1)
      run(
        Effect.sleep(Math.max(0, retry.retry_at - at)).pipe(
          Effect.ensuring(Effect.sync(() => bumpRetrying(accountId, priority, -1))),
          Effect.andThen(() => enqueue(accountId, batchId, [row])),
        ),
      )
    }

    const settledBy = <E>(taken: TakenRow, settle: Effect.Effect<Written, E>, answer: Answered) =>
      Effect.flatMap(settle, ({ events }) => Effect.sync(() => settled(taken, events, answer)))

    // The row as effects, from whichever step the plain code below hands it over at: each step as the
    // one before it left the row, so a row handed over is never decided twice.
    const settleFrom = (taken: TakenRow, decided: Decided, attempt: number, answer: Answered) =>
      Effect.gen(function* () {
        const { batchId, row } = taken
        const written = yield* startWritten(batchId, row, decided, attempt)
        if (written === undefined) return
        yield* settledBy(taken, write(batchId, { type: "SettleRow", row, attempt: written, at: answer.at, outcome: answer.outcome }), answer)
      })
    const callFrom = (taken: TakenRow, decided: Decided, start: Started) =>
      Effect.gen(function* () {
        const { batchId, row, freeSlot } = taken
        // The call goes out while the start is appended. A crash before the start is stored leaves the
        // row queued in the log, which runs it again: the same as a crash during the call.
        const body = bodies.cached(batchId, row) ?? (yield* bodyOf(batchId, row)) ?? "{}"
        const route = routes.get(batchId)
        const answer = yield* (route === undefined ? outcomeOf(start.attempt, body, freeSlot) : routedOutcome(start.attempt, body, freeSlot, route))
        yield* settleFrom(taken, decided, start.attempt, answer)
      })
    const rowFrom = (taken: TakenRow) =>
      Effect.flatMap(decideStart(taken.batchId, taken.row), (decided) => {
        const start = startOf(decided.events)
        if (start === undefined) return Effect.void
        counted(taken, start)
        return callFrom(taken, decided, start)
      })

    /** Runs the rest of a row as effects; the row is finished when they end, however they end. */
    const handOver = (taken: TakenRow, rest: Effect.Effect<void, Rejection | WriteError>) => {
      plain.delete(taken)
      run(
        rest.pipe(
          Effect.catchTag("BatchNotFound", () => Effect.void),
          Effect.catchTag("LeaseLost", (lost) =>
            Effect.sync(() => {
              slots.stopTaking()
              onLost(lost)
            }),
          ),
          Effect.catchAllCause((cause) => Effect.logError(`row ${taken.row} of ${taken.batchId} on ${model.id} could not be run`, cause)),
          Effect.ensuring(Effect.sync(taken.finish)),
        ),
      )
    }
    const decidedOf = (now: DecidedNow): Decided => ({ events: now.events, written: now.written() })

    // A row's common path as plain code: the start decided and the settle decided without an effect
    // each, the call made and the appends awaited by callbacks. Fibers and their allocations per row
    // were most of a row's CPU (docs/performance.md). Whatever is not that path (the batch to read from
    // the log, a body not cached, another endpoint, an answer that is not a success, an append that
    // failed) hands the row over to the effects above at the step it reached.
    let closed = false
    /** The rows on the plain path, each with the abort of its call while it is at the model. */
    const plain = new Map<TakenRow, (() => void) | undefined>()
    const done = (taken: TakenRow) => {
      plain.delete(taken)
      taken.finish()
    }
    /** A step of a row's plain code, once the actor is still running; a defect ends the row as the effects would. */
    const step = (taken: TakenRow, next: () => void) => {
      if (closed) return done(taken)
      try {
        next()
      } catch (defect) {
        handOver(taken, Effect.die(defect))
      }
    }
    const later = (taken: TakenRow, next: () => void) => queueMicrotask(() => step(taken, next))

    const runRow = (taken: TakenRow) => {
      const { batchId, row, freeSlot } = taken
      const decided = writer.decideRowNow(batchId, { type: "StartRow", row, at: clock.unsafeCurrentTimeMillis() }, lane)
      if (decided === undefined) return handOver(taken, rowFrom(taken))
      const start = startOf(decided.events)
      // Not started (the batch closing): once the log holds the decision, the row is done, or decided again.
      if (start === undefined) return handOver(taken, Effect.catchIf(decided.written(), isUnavailable, () => rowFrom(taken)))
      counted(taken, start)
      const body = bodies.cached(batchId, row)
      if (body === undefined || routes.has(batchId)) return handOver(taken, callFrom(taken, decidedOf(decided), start))
      metrics.attempt(model.id)
      const abort = upstream.start(body, onAnswered(freeSlot), lane.validThrough(), undefined, (answer) =>
        step(taken, () => {
          plain.set(taken, undefined)
          if (classifyUpstream(answer)._tag !== "Success") {
            return handOver(taken, Effect.flatMap(answeredOf(start.attempt, answer), (a) => settleFrom(taken, decidedOf(decided), start.attempt, a)))
          }
          const success = answered(start.attempt, answer, 0)
          decided.whenStored((stored) => later(taken, () => settle(taken, decided, start.attempt, success, stored !== undefined)))
        }),
      )
      plain.set(taken, abort)
    }
    const settle = (taken: TakenRow, started: DecidedNow, attempt: number, answer: Answered, startStored: boolean) => {
      if (!startStored) return handOver(taken, settleFrom(taken, decidedOf(started), attempt, answer))
      const { batchId, row } = taken
      const command = { type: "SettleRow", row, attempt, at: answer.at, outcome: answer.outcome } as const
      const decided = writer.decideRowNow(batchId, command, lane)
      if (decided === undefined) return handOver(taken, settledBy(taken, write(batchId, command), answer))
      decided.whenStored((stored) =>
        later(taken, () => {
          if (stored === undefined) {
            return handOver(taken, settledBy(taken, Effect.catchIf(decided.written(), isUnavailable, () => write(batchId, command)), answer))
          }
          settled(taken, stored.events, answer)
          done(taken)
        }),
      )
    }

    // Finalizers run last added first: running rows finish (below), then a row still running stops
    // here, then the effects of rows handed over are interrupted (the set's own finalizer).
    const fibers = yield* FiberSet.make<unknown, never>()
    const run = yield* FiberSet.runtime(fibers)<never>()
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        for (const [taken, abort] of plain) {
          abort?.()
          taken.finish()
        }
        plain.clear()
      }),
    )
    slots.serve((taken) => step(taken, () => runRow(taken)))
    // It waits on wall-clock time: shutdown must not depend on the clock the rows are scheduled by.
    // (A timer of the runtime's own: the actors' Clock may be a TestClock that nothing moves at shutdown.)
    yield* Effect.addFinalizer(() =>
      Effect.promise(
        () =>
          new Promise<void>((resolve) => {
            slots.stopTaking()
            const deadline = Date.now() + SHUTDOWN_GRACE_MS
            const check = () => (slots.busy() === 0 || abandoned || Date.now() > deadline ? resolve() : setTimeout(check, 20))
            check()
          }),
      ),
    )

    let waited: ModelState | undefined
    const sample = (): ModelSample => {
      const limit = load.batchSlots(model)
      const concurrency = load.concurrency(model)
      const retryAfterMs = load.retryAfterMs(model)
      return {
        ...(slots.queued() > 0 && slots.calling() >= limit ? { full: { inUse: slots.inUse(), limit } } : {}),
        ...(limit < concurrency ? { interactive: { inFlight: load.interactiveEverywhere(model), slots: concurrency - limit } } : {}),
        ...(load.interactiveInFlight(model) > 0 && slots.queuedOf("background") > 0 ? { backgroundHeld: true } : {}),
        ...(concurrency < model.batchConcurrency
          ? { pushback: { concurrency, of: model.batchConcurrency, ...(retryAfterMs === undefined ? {} : { retryAfterS: Math.ceil(retryAfterMs / 1000) }) } }
          : {}),
      }
    }

    return {
      model,
      waitState: () => (waited = nextModelState(waited, sample(), clock.unsafeCurrentTimeMillis())),
      enqueue,
      drop: (batchId: string) => {
        slots.drop(batchId)
        bodies.drop(batchId)
        createdAt.delete(batchId)
        routes.delete(batchId)
      },
      stopTaking: slots.stopTaking,
      abandon: () => {
        abandoned = true
        slots.stopTaking()
      },
      inFlight: slots.calling,
      queued: slots.queued,
      snapshot: () => {
        const queuedByAccount = slots.queuedByAccount()
        for (const [accountId, n] of retrying) queuedByAccount.set(accountId, (queuedByAccount.get(accountId) ?? 0) + n)
        return {
          model: model.id,
          batchConcurrency: model.batchConcurrency,
          concurrency: load.concurrency(model),
          slotsLimit: load.batchSlots(model),
          slotsInUse: slots.inUse(),
          running: slots.busy(),
          queuedByAccount,
          queuedByPriority: new Map(Priorities.map((p) => [p, slots.queuedOf(p) + (retryingByPriority.get(p) ?? 0)])),
          interactiveInFlight: load.interactiveInFlight(model),
          leaseOwner: lane.owner,
        }
      },
    } satisfies ModelActor
  })
