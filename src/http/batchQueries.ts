import { Effect } from "effect"
import { CHAT_ENDPOINT } from "../domain/batch/endpoint.js"
import { batchReads, toBatchObject } from "../projections/batchReads.js"
import { progressReads } from "../projections/progressReads.js"
import { parseResultId, resultReads } from "../projections/resultReads.js"
import type { Caller } from "./auth.js"
import { BatchAccess } from "./batchAccess.js"
import { badRequest, notFound } from "./errors.js"
import { batchEventsResponse, requestedCursor } from "./eventsStream.js"
import { EventStreamsClosing } from "./eventsStreamClosing.js"
import { parseAfter, parseAsOf, parseErrorCodeFilter, parseLimit, parseStatusFilter } from "./pageParams.js"
import { resultsJsonlResponse } from "./resultsJsonl.js"

type Param = string | ReadonlyArray<string> | undefined

/** The batch endpoints that read: a batch, the caller's batches, their results and their events. */
export class BatchQueries extends Effect.Service<BatchQueries>()("Http/BatchQueries", {
  effect: Effect.gen(function* () {
    const access = yield* BatchAccess
    const { batches, results } = access
    const eventSources = { log: access.log, projector: access.projector, batches, results, closing: yield* EventStreamsClosing }

    /** `GET /v1/batches/{id}`, now or as it was at `as_of`. */
    const retrieve = (caller: Caller, batchId: string, params: { readonly as_of?: Param }) =>
      Effect.gen(function* () {
        yield* access.reachable
        const seconds = yield* parseAsOf(params.as_of)
        const row = yield* access.owned(caller.account.id, batchId)
        if (seconds === undefined) return access.shown(row)
        // A past instant's object: its queue position and estimate then are not known.
        return yield* access.asOf(row, seconds, (scratch) => toBatchObject(batchReads(scratch).one(row.id)!))
      })

    /** `GET /v1/batches`: a page of the caller's batches, newest first. */
    const list = (caller: Caller, params: { readonly limit?: Param; readonly after?: Param }) =>
      Effect.gen(function* () {
        yield* access.reachable
        const limit = yield* parseLimit(params.limit, 100, 20)
        const after = yield* parseAfter(params.after)
        let afterSeq: number | undefined
        if (after !== undefined) {
          const anchor = batches.ofAccount(caller.account.id, after)
          if (anchor === undefined) return yield* Effect.fail(badRequest(`'after' is not the ID of one of your batches: '${after}'`, "after"))
          afterSeq = anchor.seq
        }
        const rows = batches.page(caller.account.id, limit, afterSeq)
        const data = rows.slice(0, limit).map(access.shown)
        return {
          object: "list" as const,
          data,
          has_more: rows.length > limit,
          first_id: data[0]?.id ?? null,
          last_id: data[data.length - 1]?.id ?? null,
        }
      })

    /** `GET /v1/batches/{id}/results`: a page of results as JSON text, now or as they were at `as_of`. */
    const resultsPage = (
      caller: Caller,
      batchId: string,
      params: { readonly as_of?: Param; readonly limit?: Param; readonly after?: Param; readonly status?: Param; readonly error_code?: Param },
    ) =>
      Effect.gen(function* () {
        yield* access.reachable
        const row = yield* access.owned(caller.account.id, batchId)
        const seconds = yield* parseAsOf(params.as_of)
        const limit = yield* parseLimit(params.limit, 1000, 100)
        const after = yield* parseAfter(params.after)
        const status = yield* parseStatusFilter(params.status)
        const code = yield* parseErrorCodeFilter(params.error_code)
        let from = 0
        if (after !== undefined) {
          const idx = parseResultId(after)
          if (idx === undefined) {
            return yield* Effect.fail(badRequest(`'after' must be a result ID such as batch_req_42, got '${after}'`, "after"))
          }
          from = idx + 1
        }
        if (seconds === undefined) return results.pageJson(batchId, from, limit, { status, code })
        return yield* access.asOf(row, seconds, (scratch) => resultReads(scratch).pageJson(batchId, from, limit, { status, code }))
      })

    /** `GET /v1/batches/{id}/results/{result_id}`: one result line as JSON text, with the request it answers. */
    const result = (caller: Caller, batchId: string, resultId: string) =>
      Effect.gen(function* () {
        yield* access.reachable
        const batch = yield* access.owned(caller.account.id, batchId)
        const idx = parseResultId(resultId)
        const line = idx === undefined ? undefined : results.lineJson(batchId, idx)
        if (idx === undefined || line === undefined) {
          return yield* Effect.fail(notFound(`No result found with id '${resultId}' in batch '${batchId}'`))
        }
        const body = yield* access.requestBodies.take(batchId, idx).pipe(Effect.mapError(access.logDown))
        const request =
          body === undefined
            ? "null"
            : `{"custom_id":${JSON.stringify(results.customId(batchId, idx))},"method":"POST","url":"${batch.endpoint ?? CHAT_ENDPOINT}","body":${body}}`
        return `${line.slice(0, -1)},"request":${request}}`
      })

    /** `GET /v1/batches/{id}/results.jsonl`: every result line, streamed. */
    const resultsJsonl = (caller: Caller, batchId: string) =>
      Effect.gen(function* () {
        yield* access.reachable
        yield* access.owned(caller.account.id, batchId)
        return resultsJsonlResponse(results, batchId)
      })

    /** `GET /v1/batches/{id}/events`: the batch's events as Server-Sent Events, after the client's cursor. */
    const events = (caller: Caller, batchId: string, lastEventId: Param) =>
      Effect.gen(function* () {
        yield* access.reachable
        yield* access.owned(caller.account.id, batchId)
        const after = yield* requestedCursor(lastEventId)
        yield* access.log.lastSeq.pipe(Effect.mapError(access.logDown))
        return batchEventsResponse(eventSources, batchId, after)
      })

    const progressOf = progressReads(access.db)
    /** `GET /v1/batches/{id}/progress`: its settled rows over time, and once final its own rate. */
    const progress = (caller: Caller, batchId: string) =>
      Effect.gen(function* () {
        yield* access.reachable
        const row = yield* access.owned(caller.account.id, batchId)
        return progressOf.of(row.id, access.now())!
      })

    return { retrieve, list, resultsPage, result, resultsJsonl, events, progress } as const
  }),
}) {}
