import { Effect, Either, Stream } from "effect"
import { BatchWriter } from "../actors/BatchWriter.js"
import { makeDeleteBatch } from "../actors/deleteBatch.js"
import { Dispatcher } from "../actors/Dispatcher.js"
import { ModelCatalog } from "../config/ModelCatalog.js"
import { FinalBatchStatuses } from "../domain/api/BatchStatus.js"
import { CHAT_ENDPOINT } from "../domain/batch/endpoint.js"
import { isRerun, nothingToRerun, parseRerunRequest } from "../domain/batch/rerunRequest.js"
import { CreateRejected, type ValidBatch, type ValidRequest, validateCreateBatch } from "../domain/batch/validateCreate.js"
import { type FileBatchRequest, FileBatchMessage, fileLineChecker, isFileBatchBody, validateFileBatchRequest } from "../domain/file/fileBatch.js"
import { Files } from "./files.js"
import { DEFAULT_PRIORITY } from "../domain/scheduling/priority.js"
import { Projector } from "../projections/Projector.js"
import type { Caller } from "./auth.js"
import { BatchAccess } from "./batchAccess.js"
import { BatchCreation } from "./batchCreation.js"
import { MAX_BODY_BYTES, readJsonBody } from "./body.js"
import { badRequest, conflict, payloadTooLarge } from "./errors.js"
import { estimateBatch } from "./estimate.js"
import { HttpSettings } from "./settings.js"

const RERUN_BODY_BYTES = 1024 * 1024

/** The batch endpoints that change something, or would: estimate, rerun, cancel, delete. */
export class BatchCommands extends Effect.Service<BatchCommands>()("Http/BatchCommands", {
  scoped: Effect.gen(function* () {
    const access = yield* BatchAccess
    const creation = yield* BatchCreation
    const writer = yield* BatchWriter
    const projector = yield* Projector
    const dispatcher = yield* Dispatcher
    const catalog = yield* ModelCatalog
    const settings = yield* HttpSettings
    const deleteBatch = yield* makeDeleteBatch
    const files = yield* Files
    const parsed = <A>(result: Either.Either<A, CreateRejected>) =>
      Either.match(result, {
        onLeft: (rejected) => Effect.fail(badRequest(rejected.message, rejected.param)),
        onRight: Effect.succeed,
      })

    /**
     * An estimate of a file-based create reads the file's rows, checked as the create checks them, into
     * memory as an inline create's are: up to the inline limit of 32 MiB.
     */
    const fileRows = (caller: Caller, request: FileBatchRequest) =>
      Effect.gen(function* () {
        const file = yield* files.usable(caller.account.id, request.inputFileId)
        if (file.bytes > MAX_BODY_BYTES) {
          return yield* Effect.fail(
            payloadTooLarge(
              `An estimate reads a file of up to ${MAX_BODY_BYTES} bytes (32 MiB), the size of an inline create; '${request.inputFileId}' has ${file.bytes}: estimate a part of it`,
            ),
          )
        }
        const check = fileLineChecker(request.inputFileId, request.endpoint, access.modelAccess(caller))
        const requests: Array<ValidRequest> = []
        yield* Stream.runForEach(files.lines(caller.account.id, request.inputFileId), (line) => {
          const row = check(line)
          if (row instanceof CreateRejected) return Effect.fail(badRequest(row.message, row.param))
          requests.push(row)
          return Effect.void
        })
        if (requests.length === 0) return yield* Effect.fail(badRequest(FileBatchMessage.noLines(request.inputFileId), "input_file_id"))
        return { endpoint: request.endpoint, requests, metadata: request.metadata, priority: request.priority } satisfies ValidBatch
      })

    /** `POST /v1/batches/estimate`: what a create of the same body would cost and when it would finish. */
    const estimate = (caller: Caller) =>
      Effect.gen(function* () {
        yield* access.reachable
        const input = yield* readJsonBody()
        const batch = isFileBatchBody(input)
          ? yield* fileRows(caller, yield* parsed(validateFileBatchRequest(input)))
          : yield* parsed(validateCreateBatch(input, access.modelAccess(caller)))
        const deps = { catalog, etas: access.etas, batches: access.batches, db: access.db, maxUnfinished: settings.maxUnfinishedBatches }
        return yield* estimateBatch(deps, caller, batch, yield* writer.now)
      })

    /** `POST /v1/batches/{id}/rerun`: a new batch of a final batch's rows that the request picks. */
    const rerun = (caller: Caller, batchId: string) =>
      Effect.gen(function* () {
        yield* access.reachable
        const original = yield* access.owned(caller.account.id, batchId)
        const request = yield* Effect.flatMap(readJsonBody(RERUN_BODY_BYTES, { emptyIs: {} }), (input) => parsed(parseRerunRequest(input)))
        if (!FinalBatchStatuses.has(original.status)) {
          return yield* Effect.fail(
            conflict(`Batch '${original.id}' is ${original.status}: only a final batch (completed, failed, expired or cancelled) can be rerun`),
          )
        }
        const picked = access.results.outcomes(original.id).filter((row) => isRerun(request, row))
        if (picked.length === 0) return yield* Effect.fail(badRequest(nothingToRerun(original.id, request), "statuses"))
        const requests: Array<unknown> = []
        for (const row of picked) {
          const body = yield* access.requestBodies.take(original.id, row.idx).pipe(Effect.mapError(access.logDown))
          if (body === undefined) return yield* Effect.fail(access.gone(caller.account.id, original.id))
          requests.push({ custom_id: row.custom_id, method: "POST", url: original.endpoint ?? CHAT_ENDPOINT, body: JSON.parse(body) })
        }
        const metadata = request.metadata === undefined ? (original.metadata === null ? null : JSON.parse(original.metadata)) : request.metadata
        const priority = request.priority ?? original.priority ?? DEFAULT_PRIORITY
        return yield* creation.rerun(caller, { requests, metadata, priority }, original.id)
      })

    /** `POST /v1/batches/{id}/cancel`: the batch object once its cancel is written and read back. */
    const cancel = (caller: Caller, batchId: string) =>
      Effect.gen(function* () {
        yield* access.reachable
        yield* access.owned(caller.account.id, batchId)
        const written = yield* writer.execute(batchId, { type: "Cancel", at: yield* writer.now }).pipe(
          Effect.catchTags({
            BatchNotFound: () => Effect.fail(access.gone(caller.account.id, batchId)),
            RowsStillRunning: () => Effect.fail(access.gone(caller.account.id, batchId)),
            LogUnavailable: (e) => Effect.fail(access.logDown(e)),
          }),
        )
        yield* projector.awaitSeq(written.seq)
        dispatcher.dropBatch(batchId)
        return access.current(batchId)
      })

    /** `DELETE /v1/batches/{id}`: refused while a row of it runs. */
    const remove = (caller: Caller, batchId: string) =>
      Effect.gen(function* () {
        yield* access.reachable
        yield* access.owned(caller.account.id, batchId)
        yield* deleteBatch(batchId).pipe(
          Effect.catchTags({
            BatchNotFound: () => Effect.fail(access.gone(caller.account.id, batchId)),
            RowsStillRunning: (e) =>
              Effect.fail(
                conflict(`Batch '${batchId}' has ${e.running} request(s) still running; cancel it and wait for them to finish before deleting it`),
              ),
            LogUnavailable: (e) => Effect.fail(access.logDown(e)),
          }),
        )
        return { id: batchId, object: "batch.deleted" as const, deleted: true as const }
      })

    return { create: creation.create, estimate, rerun, cancel, remove } as const
  }),
}) {}
