import { Deferred, Effect, Random, Schedule } from "effect"
import { randomUUID } from "node:crypto"
import { type ModelEntry, costUsd } from "../config/Catalog.js"
import type { BatchCommand, RowOutcome } from "../domain/batch/decide.js"
import { classifyUpstream } from "../domain/upstream/classifyUpstream.js"
import { backoffMs } from "../domain/upstream/retryPolicy.js"
import type { ResultReads } from "../projections/resultReads.js"
import type { BatchWriterShape } from "./BatchWriter.js"
import { FairQueue } from "../domain/scheduling/FairQueue.js"
import type { AdmissionShape } from "./Admission.js"
import type { ModelLoadShape } from "./ModelLoad.js"
import { makeUpstreamCaller } from "./upstreamCall.js"

export interface ModelActor {
  readonly model: ModelEntry
  readonly enqueue: (accountId: string, batchId: string, rows: ReadonlyArray<number>) => void
  readonly drop: (batchId: string) => void
  /** Shutdown has begun: no row starts from now on; the running ones go on to finish. */
  readonly stopTaking: () => void
  readonly inFlight: () => number
  readonly queued: () => number
}

const SHUTDOWN_GRACE_MS = 30_000
const LOG_RETRY = Schedule.exponential("100 millis").pipe(Schedule.union(Schedule.spaced("2 seconds")))

/**
 * One model's batch slots: `batchConcurrency` workers, each running one row at a time, taking rows
 * from the batches in turn. On shutdown it stops taking rows and lets the running ones finish.
 */
export const makeModelActor = (
  model: ModelEntry,
  writer: BatchWriterShape,
  results: ResultReads,
  admission: AdmissionShape,
  load: ModelLoadShape,
) =>
  Effect.gen(function* () {
    const queue = new FairQueue()
    const callUpstream = yield* makeUpstreamCaller(model)
    let waiting: Array<Deferred.Deferred<void>> = []
    let running = 0
    let draining = false

    const wake = () => {
      const sleepers = waiting
      waiting = []
      for (const d of sleepers) Deferred.unsafeDone(d, Effect.void)
    }
    const stopTaking = () => {
      draining = true
      wake()
    }
    const enqueue = (accountId: string, batchId: string, rows: ReadonlyArray<number>) => {
      queue.push(accountId, batchId, rows)
      wake()
    }
    admission.onChange(wake)
    load.onChange(wake)
    const mayStart = (accountId: string, batchId: string) => admission.mayStart(accountId, batchId)
    const nextRow = Effect.gen(function* () {
      while (true) {
        const item = draining || running >= load.batchSlots(model) ? undefined : queue.take(mayStart)
        if (item !== undefined) {
          // Taken synchronously with the check above, so no two workers pass it for the last slot.
          running++
          admission.acquire(item.accountId)
          return item
        }
        const bell = yield* Deferred.make<void>()
        waiting.push(bell)
        yield* Deferred.await(bell)
      }
    })

    const outcomeOf = (attempt: number, body: string) =>
      Effect.gen(function* () {
        const answer = yield* callUpstream(body)
        load.observe(model, answer._tag === "Response" ? answer.status : undefined)
        const classified = classifyUpstream(answer)
        const at = yield* writer.now
        switch (classified._tag) {
          case "Success": {
            const completion = answer._tag === "Response" ? answer.body : null
            const response = { status_code: 200, request_id: `req_${randomUUID().replaceAll("-", "")}`, body: completion }
            const usage = (completion as { usage?: unknown } | null)?.usage
            return { at, outcome: { _tag: "Completed", response, costUsd: costUsd(model, usage) } satisfies RowOutcome }
          }
          case "Retryable": {
            const delay = backoffMs(attempt, yield* Random.next, classified.retryAfterMs)
            const error =
              classified.status === undefined
                ? { code: classified.code, message: classified.message }
                : { code: classified.code, message: classified.message, status: classified.status }
            return { at, outcome: { _tag: "Retryable", error, retryAt: at + delay } satisfies RowOutcome }
          }
          case "Permanent":
            return {
              at,
              outcome: {
                _tag: "Permanent",
                error: { code: classified.code, message: classified.message, status: classified.status },
              } satisfies RowOutcome,
            }
        }
      })

    // A row the log could not take (a NATS restart, a publish whose ack was lost) is not dropped: the
    // same command is sent again until the log answers. Deciding it twice gives the same events with
    // the same message ids, which the log stores once.
    // The retry is set up only once a write has failed: a retry wrapper costs about 15 µs even when unused.
    const write = (batchId: string, command: BatchCommand & { readonly row: number }) => {
      const attempt = writer.execute(batchId, command).pipe(
        Effect.tapErrorTag("LogUnavailable", (e) =>
          Effect.logWarning(`row ${command.row} of ${batchId} waits for the event log: ${e.message}`),
        ),
      )
      return attempt.pipe(
        Effect.catchTag("LogUnavailable", () =>
          attempt.pipe(Effect.retry({ schedule: LOG_RETRY, while: (e) => e._tag === "LogUnavailable" })),
        ),
      )
    }

    const runRow = (accountId: string, batchId: string, row: number) =>
      Effect.gen(function* () {
        const started = yield* write(batchId, { type: "StartRow", row, at: yield* writer.now })
        const start = started.events.find((e) => e.type === "row_started")
        // A start whose append was retried may already be in the log (its ack was lost): the row is
        // then running with no one running it but this worker, which took it from the queue.
        const phase = start?.type === "row_started" ? undefined : yield* writer.rowPhase(batchId, row)
        const attempt = start?.type === "row_started" ? start.attempt : phase?.status === "running" ? phase.attempt : undefined
        if (attempt === undefined) return
        const body = results.body(batchId, row) ?? "{}"
        const { at, outcome } = yield* outcomeOf(attempt, body)
        const settled = yield* write(batchId, { type: "SettleRow", row, attempt, at, outcome })
        const retry = settled.events.find((e) => e.type === "row_retrying")
        if (retry !== undefined && retry.type === "row_retrying") {
          yield* Effect.sleep(Math.max(0, retry.retry_at - at)).pipe(
            Effect.andThen(() => enqueue(accountId, batchId, [row])),
            Effect.forkDaemon,
          )
        }
      }).pipe(
        Effect.catchTag("BatchNotFound", () => Effect.void),
        Effect.catchAllCause((cause) => Effect.logError(`row ${row} of ${batchId} on ${model.id} could not be run`, cause)),
      )

    const worker = Effect.forever(
      Effect.gen(function* () {
        const { accountId, batchId, row } = yield* nextRow
        yield* runRow(accountId, batchId, row).pipe(
          Effect.ensuring(
            Effect.sync(() => {
              running--
              admission.release(accountId)
              wake()
            }),
          ),
        )
      }),
    )
    for (let i = 0; i < model.batchConcurrency; i++) yield* Effect.forkScoped(worker)
    // Added after the workers so it runs before they are interrupted: running rows finish first.
    // It waits on wall-clock time: shutdown must not depend on the clock the rows are scheduled by.
    yield* Effect.addFinalizer(() =>
      Effect.promise(
        () =>
          new Promise<void>((resolve) => {
            stopTaking()
            const deadline = Date.now() + SHUTDOWN_GRACE_MS
            const check = () => (running === 0 || Date.now() > deadline ? resolve() : setTimeout(check, 20))
            check()
          }),
      ),
    )

    return {
      model,
      enqueue,
      drop: (batchId: string) => queue.drop(batchId),
      stopTaking,
      inFlight: () => running,
      queued: () => queue.size,
    } satisfies ModelActor
  })
