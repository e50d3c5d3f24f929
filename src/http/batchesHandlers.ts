import { HttpApiBuilder } from "@effect/platform"
import { Effect, Either } from "effect"
import { BatchWriter } from "../actors/BatchWriter.js"
import { makeDeleteBatch } from "../actors/deleteBatch.js"
import { Dispatcher } from "../actors/Dispatcher.js"
import { ModelCatalog } from "../config/ModelCatalog.js"
import { EventLog, type LogUnavailable } from "../eventlog/EventLog.js"
import { LogHealth } from "../eventlog/LogHealth.js"
import { type BatchRow, batchReads, toBatchObject } from "../projections/batchReads.js"
import { makeEtas } from "./eta.js"
import { estimateBatch } from "./estimate.js"
import { validateCreateBatch } from "../domain/batch/validateCreate.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import { parseResultId, resultReads } from "../projections/resultReads.js"
import { tombstoneReads } from "../projections/tombstoneReads.js"
import { makeIdempotencyKeys } from "../actors/idempotencyKeys.js"
import { FinalBatchStatuses } from "../domain/api/BatchStatus.js"
import { isRerun, nothingToRerun, parseRerunRequest } from "../domain/batch/rerunRequest.js"
import { batchCreation, idempotencyKeyHeader } from "./batchCreation.js"
import { SluiceApi } from "./api.js"
import { authenticate, requireBatchAccess } from "./auth.js"
import { readJsonBody } from "./body.js"
import { badRequest, batchDeleted, batchInferenceUnavailable, batchNotFound, conflict, notFound, statusOf } from "./errors.js"
import { batchEventsResponse, requestedCursor } from "./eventsStream.js"
import { EventStreamsClosing } from "./eventsStreamClosing.js"
import { parseAfter, parseAsOf, parseErrorCodeFilter, parseLimit, parseStatusFilter } from "./pageParams.js"
import { batchAsOf } from "../projections/asOf.js"
import { makeBodyCache } from "../actors/bodyCache.js"
import { type ApiError, respondJson, respondJsonText } from "./respond.js"
import { Metrics } from "../metrics/Metrics.js"
import { resultsJsonlResponse } from "./resultsJsonl.js"
import { HttpSettings } from "./settings.js"
import { unfinishedLimit } from "./unfinishedLimit.js"

export const BatchesLive = HttpApiBuilder.group(SluiceApi, "batches", (handlers) =>
  Effect.gen(function* () {
    const db = yield* ReadModel
    const batches = batchReads(db)
    const results = resultReads(db)
    const tombstones = tombstoneReads(db)
    const writer = yield* BatchWriter
    const projector = yield* Projector
    const dispatcher = yield* Dispatcher
    const catalog = yield* ModelCatalog
    const deleteBatch = yield* makeDeleteBatch
    const settings = yield* HttpSettings
    const log = yield* EventLog
    const metrics = yield* Metrics
    // The console's row view reads a row's request from the log, where the bodies are stored.
    const requestBodies = makeBodyCache(results, log)
    const eventSources = { log, projector, batches, results, closing: yield* EventStreamsClosing }
    const answerError = (error: ApiError) => respondJson(Effect.fail(error))
    const health = yield* LogHealth
    const logDown = (e: LogUnavailable) => batchInferenceUnavailable(e.message)
    /** While the log is known to be away, every batch endpoint says so, reads included: what they show may be stale. */
    const reachable = Effect.suspend(() => {
      const why = health.unavailable()
      return why === undefined ? Effect.void : Effect.fail(batchInferenceUnavailable(why))
    })

    /** The caller's batch; its owner is told when it was deleted, anyone else that no such batch exists. */
    const gone = (accountId: string, batchId: string) => {
      const tombstone = tombstones.ofAccount(accountId, batchId)
      return tombstone === undefined ? batchNotFound(batchId) : batchDeleted(batchId, tombstone.deleted_at, tombstone.reason)
    }
    const owned = (accountId: string, batchId: string) => {
      const row = batches.ofAccount(accountId, batchId)
      return row === undefined ? Effect.fail(gone(accountId, batchId)) : Effect.succeed(row)
    }
    const etas = makeEtas(db, projector)
    const now = () => Effect.runSync(writer.now)
    const shown = (row: BatchRow) => toBatchObject(row, etas.ofBatch(row, now()))
    const current = (batchId: string) => shown(batches.one(batchId)!)
    /** The batch's own read model as of an instant, from its events alone; 404 before it was created. */
    const asOf = <A>(row: { id: string; created_at: number }, seconds: number, read: (scratch: ReadModel["Type"]) => A) =>
      Effect.scoped(
        Effect.flatMap(batchAsOf(log, row.id, seconds).pipe(Effect.mapError(logDown)), (scratch) =>
          batchReads(scratch).one(row.id) === undefined
            ? Effect.fail(
                notFound(`No batch found with id '${row.id}' as of ${seconds}: it was created at ${row.created_at}`, "batch_not_found"),
              )
            : Effect.sync(() => read(scratch)),
        ),
      )

    const limit = unfinishedLimit(batches, settings.maxUnfinishedBatches, writer.now)

    const idempotencyKeys = makeIdempotencyKeys(log)
    const creation = batchCreation({ writer, completionWindowMs: settings.completionWindowMs, projector, dispatcher, limit, keys: idempotencyKeys, logDown, current, owned })
    const isAvailable = (allowed: ReadonlyArray<string> | null) => (model: string) =>
      catalog.has(model) && (allowed === null || allowed.includes(model))

    return handlers
      .handleRaw("create", () =>
        creation.answer(Effect.gen(function* () {
          const caller = yield* authenticate.pipe(Effect.flatMap(requireBatchAccess))
          yield* reachable
          const key = yield* idempotencyKeyHeader
          return yield* creation.create(caller, key, isAvailable(caller.account.models))
        }).pipe(Effect.tapError((error) => Effect.sync(() => metrics.createRefused(statusOf(error)))))),
      )
      .handleRaw("estimate", () =>
        respondJson(Effect.gen(function* () {
          const caller = yield* authenticate.pipe(Effect.flatMap(requireBatchAccess))
          yield* reachable
          const input = yield* readJsonBody()
          const batch = yield* Either.match(validateCreateBatch(input, { isAvailable: isAvailable(caller.account.models) }), {
            onLeft: (rejected) => Effect.fail(badRequest(rejected.message, rejected.param)),
            onRight: Effect.succeed,
          })
          const deps = { catalog, etas, batches, db, maxUnfinished: settings.maxUnfinishedBatches }
          return yield* estimateBatch(deps, caller, batch, yield* writer.now)
        })),
      )
      .handleRaw("rerun", ({ path }) =>
        creation.answer(Effect.gen(function* () {
          const caller = yield* authenticate.pipe(Effect.flatMap(requireBatchAccess))
          yield* reachable
          const original = yield* owned(caller.account.id, path.batch_id)
          const request = yield* Effect.flatMap(readJsonBody(1024 * 1024, { emptyIs: {} }), (input) =>
            Either.match(parseRerunRequest(input), {
              onLeft: (rejected) => Effect.fail(badRequest(rejected.message, rejected.param)),
              onRight: Effect.succeed,
            }),
          )
          if (!FinalBatchStatuses.has(original.status)) {
            return yield* Effect.fail(
              conflict(`Batch '${original.id}' is ${original.status}: only a final batch (completed, failed, expired or cancelled) can be rerun`),
            )
          }
          const picked = results.outcomes(original.id).filter((row) => isRerun(request, row))
          if (picked.length === 0) return yield* Effect.fail(badRequest(nothingToRerun(original.id, request), "statuses"))
          const requests: Array<unknown> = []
          for (const row of picked) {
            const body = yield* requestBodies.take(original.id, row.idx).pipe(Effect.mapError(logDown))
            if (body === undefined) return yield* Effect.fail(gone(caller.account.id, original.id))
            requests.push({ custom_id: row.custom_id, method: "POST", url: "/v1/chat/completions", body: JSON.parse(body) })
          }
          const metadata = request.metadata === undefined ? (original.metadata === null ? null : JSON.parse(original.metadata)) : request.metadata
          return yield* creation.rerun(caller, { requests, metadata }, isAvailable(caller.account.models), original.id)
        })),
      )
      .handleRaw("retrieve", ({ path, urlParams }) =>
        respondJson(Effect.gen(function* () {
          const caller = yield* authenticate
          yield* reachable
          const seconds = yield* parseAsOf(urlParams.as_of)
          const row = yield* owned(caller.account.id, path.batch_id)
          if (seconds === undefined) return shown(row)
          // A past instant's object: its queue position and estimate then are not known.
          return yield* asOf(row, seconds, (scratch) => toBatchObject(batchReads(scratch).one(row.id)!))
        })),
      )
      .handleRaw("list", ({ urlParams }) =>
        respondJson(Effect.gen(function* () {
          const caller = yield* authenticate
          yield* reachable
          const limit = yield* parseLimit(urlParams.limit, 100, 20)
          const after = yield* parseAfter(urlParams.after)
          let afterSeq: number | undefined
          if (after !== undefined) {
            const anchor = batches.ofAccount(caller.account.id, after)
            if (anchor === undefined) return yield* Effect.fail(badRequest(`'after' is not the ID of one of your batches: '${after}'`, "after"))
            afterSeq = anchor.seq
          }
          const rows = batches.page(caller.account.id, limit, afterSeq)
          const hasMore = rows.length > limit
          const data = rows.slice(0, limit).map(shown)
          return {
            object: "list" as const,
            data,
            has_more: hasMore,
            first_id: data[0]?.id ?? null,
            last_id: data[data.length - 1]?.id ?? null,
          }
        })),
      )
      .handleRaw("results", ({ path, urlParams }) =>
        respondJsonText(Effect.gen(function* () {
          const caller = yield* authenticate
          yield* reachable
          const row = yield* owned(caller.account.id, path.batch_id)
          const seconds = yield* parseAsOf(urlParams.as_of)
          const limit = yield* parseLimit(urlParams.limit, 1000, 100)
          const after = yield* parseAfter(urlParams.after)
          const status = yield* parseStatusFilter(urlParams.status)
          const code = yield* parseErrorCodeFilter(urlParams.error_code)
          let from = 0
          if (after !== undefined) {
            const idx = parseResultId(after)
            if (idx === undefined) {
              return yield* Effect.fail(badRequest(`'after' must be a result ID such as batch_req_42, got '${after}'`, "after"))
            }
            from = idx + 1
          }
          if (seconds === undefined) return results.pageJson(path.batch_id, from, limit, { status, code })
          return yield* asOf(row, seconds, (scratch) => resultReads(scratch).pageJson(path.batch_id, from, limit, { status, code }))
        })),
      )
      .handleRaw("result", ({ path }) =>
        respondJsonText(Effect.gen(function* () {
          const caller = yield* authenticate
          yield* reachable
          yield* owned(caller.account.id, path.batch_id)
          const idx = parseResultId(path.result_id)
          const line = idx === undefined ? undefined : results.lineJson(path.batch_id, idx)
          if (idx === undefined || line === undefined) {
            return yield* Effect.fail(notFound(`No result found with id '${path.result_id}' in batch '${path.batch_id}'`))
          }
          const body = yield* requestBodies.take(path.batch_id, idx).pipe(Effect.mapError(logDown))
          const request =
            body === undefined
              ? "null"
              : `{"custom_id":${JSON.stringify(results.customId(path.batch_id, idx))},"method":"POST","url":"/v1/chat/completions","body":${body}}`
          return `${line.slice(0, -1)},"request":${request}}`
        })),
      )
      .handleRaw("resultsJsonl", ({ path }) =>
        Effect.gen(function* () {
          const caller = yield* authenticate
          yield* reachable
          yield* owned(caller.account.id, path.batch_id)
          return resultsJsonlResponse(results, path.batch_id)
        }).pipe(Effect.catchAll(answerError)),
      )
      .handleRaw("events", ({ path, urlParams }) =>
        Effect.gen(function* () {
          const caller = yield* authenticate
          yield* reachable
          yield* owned(caller.account.id, path.batch_id)
          const after = yield* requestedCursor(urlParams.last_event_id)
          yield* log.lastSeq.pipe(Effect.mapError(logDown))
          return batchEventsResponse(eventSources, path.batch_id, after)
        }).pipe(Effect.catchAll(answerError)),
      )
      .handleRaw("cancel", ({ path }) =>
        respondJson(Effect.gen(function* () {
          const caller = yield* authenticate
          yield* reachable
          yield* owned(caller.account.id, path.batch_id)
          const written = yield* writer.execute(path.batch_id, { type: "Cancel", at: yield* writer.now }).pipe(
            Effect.catchTags({
              BatchNotFound: () => Effect.fail(gone(caller.account.id, path.batch_id)),
              RowsStillRunning: () => Effect.fail(gone(caller.account.id, path.batch_id)),
              LogUnavailable: (e) => Effect.fail(logDown(e)),
            }),
          )
          yield* projector.awaitSeq(written.seq)
          dispatcher.dropBatch(path.batch_id)
          return current(path.batch_id)
        })),
      )
      .handleRaw("delete", ({ path }) =>
        respondJson(Effect.gen(function* () {
          const caller = yield* authenticate
          yield* reachable
          yield* owned(caller.account.id, path.batch_id)
          yield* deleteBatch(path.batch_id).pipe(
            Effect.catchTags({
              BatchNotFound: () => Effect.fail(gone(caller.account.id, path.batch_id)),
              RowsStillRunning: (e) =>
                Effect.fail(
                  conflict(
                    `Batch '${path.batch_id}' has ${e.running} request(s) still running; cancel it and wait for them to finish before deleting it`,
                  ),
                ),
              LogUnavailable: (e) => Effect.fail(logDown(e)),
            }),
          )
          return { id: path.batch_id, object: "batch.deleted" as const, deleted: true as const }
        })),
      )
  }),
)
