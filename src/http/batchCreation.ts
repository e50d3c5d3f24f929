import { HttpServerRequest } from "@effect/platform"
import { Effect, Either, Option } from "effect"
import { BatchWriter, newBatchId, type RowSource } from "../actors/BatchWriter.js"
import { Dispatcher } from "../actors/Dispatcher.js"
import { makeIdempotencyKeys } from "../actors/idempotencyKeys.js"
import type { BatchObject } from "../domain/api/BatchObject.js"
import { type ModelAccess, type ValidBatch, validateCreateBatch } from "../domain/batch/validateCreate.js"
import { idempotencyDigest } from "../domain/idempotency/digest.js"
import { idempotencyVerdict, parseIdempotencyKey } from "../domain/idempotency/verdict.js"
import { EventLog } from "../eventlog/EventLog.js"
import { Projector } from "../projections/Projector.js"
import { type Caller, requireAllowedPriority } from "./auth.js"
import { BatchAccess } from "./batchAccess.js"
import { MAX_BODY_BYTES, readBodyBytes } from "./body.js"
import { CreateBodies } from "./createBodies.js"
import type { PreparedCreate } from "./createBody.js"
import { type ApiError, badRequest, conflict, RetryLater, unprocessable } from "./errors.js"
import { HttpSettings } from "./settings.js"
import { Files } from "./files.js"
import { type FileBatch, prepareFileBatch } from "./batchFromFile.js"
import { isFileBatchBody, validateFileBatchRequest } from "../domain/file/fileBatch.js"
import { LogUnavailable } from "../eventlog/EventLog.js"
import { unfinishedLimit } from "./unfinishedLimit.js"

/** The `Idempotency-Key` header, when the request sent one; a malformed one is refused with 400. */
export const idempotencyKeyHeader = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
  const header = request.headers["idempotency-key"]
  if (header === undefined) return Effect.succeed(Option.none<string>())
  const parsed = parseIdempotencyKey(header)
  return "key" in parsed
    ? Effect.succeed(Option.some(parsed.key))
    : Effect.fail(badRequest(`The Idempotency-Key header ${parsed.refused}`, "Idempotency-Key"))
})

/** A batch checked and ready to store: inline rows, a file's, or rows the create thread serialized. */
type StoredBatch =
  | ValidBatch
  | FileBatch
  | Omit<FileBatch, "inputFileId">

export interface Created {
  readonly batch: BatchObject
  readonly replayed: boolean
}

/** A claim lost to a concurrent create: the key's records are read again. */
class Raced {}

/**
 * The input file read again as its rows are stored, failing (deleted meanwhile, the log away): the writer
 * stops as the log failing would, and the create answers the file's own error.
 */
class FileReadFailed extends LogUnavailable {
  constructor(readonly answer: ApiError) {
    super({ message: "the input file could not be read again as its rows were stored" })
  }
}
const fileReadFailed = (e: ApiError) => new FileReadFailed(e)

const stillStoring = () =>
  new RetryLater(conflict("A request with this Idempotency-Key is still being stored; retry once it has answered"), 1)

/** Creating a batch: from a create's body (with or without an idempotency key) or from a rerun's rows. */
export class BatchCreation extends Effect.Service<BatchCreation>()("Http/BatchCreation", {
  effect: Effect.gen(function* () {
    const access = yield* BatchAccess
    const writer = yield* BatchWriter
    const settings = yield* HttpSettings
    const files = yield* Files
    const bodies = yield* CreateBodies
    const d = {
      writer,
      completionWindowMs: settings.completionWindowMs,
      projector: yield* Projector,
      dispatcher: yield* Dispatcher,
      limit: unfinishedLimit(access.batches, settings.maxUnfinishedBatches, writer.now),
      keys: makeIdempotencyKeys(yield* EventLog),
      logDown: access.logDown,
      current: access.current,
      owned: access.owned,
    }
    /** The batch a create body asks for, its every row checked: inline, or read from an uploaded file. */
    const valid = (caller: Caller, input: unknown, models: ModelAccess): Effect.Effect<ValidBatch | FileBatch, ApiError> =>
      isFileBatchBody(input)
        ? Either.match(validateFileBatchRequest(input), {
            onLeft: (rejected) => Effect.fail(badRequest(rejected.message, rejected.param)),
            onRight: (request) =>
              Effect.zipRight(
                requireAllowedPriority(caller, request.priority),
                prepareFileBatch(request, files.lines(caller.account.id, request.inputFileId), models, fileReadFailed),
              ),
          })
        : Either.match(validateCreateBatch(input, models), {
            onLeft: (rejected) => Effect.fail(badRequest(rejected.message, rejected.param)),
            onRight: (batch) => Effect.as(requireAllowedPriority(caller, batch.priority), batch),
          })

    /**
     * A create's body read (on the create thread when it is large, CreateBodies) for the batch `batchId`:
     * refused, checked further as a batch from a file, or a batch whose rows are serialized already.
     */
    const readCreate = (caller: Caller, batchId: string, digest: boolean) =>
      Effect.flatMap(readBodyBytes(MAX_BODY_BYTES, { shared: true }), (bytes) =>
        bodies.prepare({ bytes, batchId, accountModels: caller.account.models, digest }),
      )

    /** The batch a read body asks for, as `valid` answers it. */
    const validPrepared = (caller: Caller, prepared: PreparedCreate, models: ModelAccess): Effect.Effect<StoredBatch, ApiError> => {
      switch (prepared._tag) {
        case "Refused":
          return Effect.fail(badRequest(prepared.message, prepared.param))
        case "Other":
          return valid(caller, prepared.input, models)
        case "Batch": {
          const { priority, encoded, rowModels } = prepared
          const rows: RowSource = { total: rowModels.length, rowModels, encoded }
          return Effect.as(requireAllowedPriority(caller, priority), { endpoint: prepared.endpoint, metadata: prepared.metadata, priority, rows })
        }
      }
    }

    /** Stores the batch holding one of the account's unfinished places; `beforeStore` runs in that hold. */
    const storeValid = <E = never>(
      caller: Caller,
      batch: StoredBatch,
      options: { readonly batchId?: string; readonly rerunOf?: string; readonly beforeStore?: Effect.Effect<void, E> },
    ): Effect.Effect<Created, ApiError | E> =>
      Effect.gen(function* () {
        // The rows are handed to the writer once and not kept while the projections apply them: a
        // 32 MiB batch is several times that as objects.
        let rows: ValidBatch["requests"] | undefined = "requests" in batch ? batch.requests : []
        const fromFile = "rows" in batch ? { rowSource: batch.rows, ...("inputFileId" in batch ? { inputFileId: batch.inputFileId } : {}) } : {}
        const take = () => {
          const taken = rows ?? []
          rows = undefined
          return taken
        }
        const { batchId, createdAt } = yield* d.limit.holdingPlace(
          caller.account.id,
          Effect.gen(function* () {
            if (options.beforeStore !== undefined) yield* options.beforeStore as Effect.Effect<void, E>
            const { batchId, seq, createdAt } = yield* d.writer
              .create({
                accountId: caller.account.id,
                keyId: caller.keyId,
                completionWindowMs: d.completionWindowMs,
                metadata: batch.metadata,
                endpoint: batch.endpoint,
                priority: batch.priority,
                requests: take(),
                ...fromFile,
                ...(options.batchId === undefined ? {} : { batchId: options.batchId }),
                ...(options.rerunOf === undefined ? {} : { rerunOf: options.rerunOf }),
              })
              .pipe(Effect.mapError((e) => (e instanceof FileReadFailed ? e.answer : d.logDown(e))))
            yield* d.projector.awaitSeq(seq)
            return { batchId, createdAt }
          }),
        )
        // Nothing runs during the create call: the rows start in the background.
        yield* Effect.forkDaemon(d.dispatcher.enqueueBatch(batchId, createdAt))
        return { batch: d.current(batchId), replayed: false } satisfies Created
      })

    const store = (caller: Caller, input: unknown, models: ModelAccess, rerunOf: string) =>
      Effect.gen(function* () {
        yield* d.limit.hasRoom(caller.account.id)
        const batch = yield* valid(caller, input, models)
        return yield* storeValid(caller, batch, { rerunOf })
      })

    /** A create's body, stored as the batch it names. */
    const storeBody = (caller: Caller, models: ModelAccess) =>
      Effect.gen(function* () {
        yield* d.limit.hasRoom(caller.account.id)
        const batchId = newBatchId()
        const { prepared } = yield* readCreate(caller, batchId, false)
        const batch = yield* validPrepared(caller, prepared, models)
        return yield* storeValid(caller, batch, { batchId })
      })

    /**
     * The IETF httpapi draft's Idempotency-Key: the key's records are read from the log, so a retry finds
     * its first attempt on any instance and after any restart. The key is claimed (naming the batch to
     * come) before the batch is stored, with the log refusing a second claim; a create that then fails
     * releases it.
     */
    const idempotent = (caller: Caller, key: string, models: ModelAccess) =>
      Effect.gen(function* () {
        const digest = idempotencyDigest(caller.account.id, key)
        // One batch id for every attempt: an attempt that lost the claim stored nothing under it.
        const batchId = newBatchId()
        const read = yield* readCreate(caller, batchId, true)
        const bodySha256 = read.bodySha256 ?? ""
        let batch: StoredBatch | undefined
        for (let attempt = 1; ; attempt++) {
          const found = yield* d.keys.look(digest).pipe(Effect.mapError(d.logDown))
          const now = yield* d.writer.now
          const verdict = idempotencyVerdict({ last: found.last, batchStored: found.batchStored, bodySha256, now })
          switch (verdict._tag) {
            case "Replay": {
              yield* d.projector.awaitSeq(yield* d.keys.head.pipe(Effect.mapError(d.logDown)))
              yield* d.owned(caller.account.id, verdict.batchId)
              return { batch: d.current(verdict.batchId), replayed: true } satisfies Created
            }
            case "BodyDiffers":
              return yield* Effect.fail(
                unprocessable("This Idempotency-Key was used with a different request body in the last 24 hours; use a new key for a new batch", "Idempotency-Key"),
              )
            case "InProgress":
              return yield* Effect.fail(stillStoring())
            case "Claim": {
              yield* d.limit.hasRoom(caller.account.id)
              batch ??= yield* validPrepared(caller, read.prepared, models)
              let claimedAt = 0
              const claim = d.keys
                .record(digest, found.seq, { type: "idempotency_key_claimed", account_id: caller.account.id, body_sha256: bodySha256, batch_id: batchId, at: now })
                .pipe(
                  Effect.tap((seq) => void (claimedAt = seq)),
                  Effect.catchTags({ WrongLastSequence: () => Effect.fail(new Raced()), LogUnavailable: (e) => Effect.fail(d.logDown(e)) }),
                  Effect.asVoid,
                )
              const stored = yield* storeValid(caller, batch, { batchId, beforeStore: claim }).pipe(
                Effect.tapError(() =>
                  claimedAt === 0
                    ? Effect.void
                    : d.keys
                        .record(digest, claimedAt, { type: "idempotency_key_released", account_id: caller.account.id, batch_id: batchId, at: now })
                        .pipe(Effect.ignore),
                ),
                Effect.catchIf(
                  (e): e is Raced => e instanceof Raced,
                  () => (attempt < 3 ? Effect.succeed(undefined) : Effect.fail(stillStoring())),
                ),
              )
              if (stored !== undefined) return stored
            }
          }
        }
      })

    /** `POST /v1/batches`: the batch in the request's body, once per `Idempotency-Key` when it sends one. */
    const create = (caller: Caller) =>
      Effect.gen(function* () {
        yield* access.reachable
        const key = yield* idempotencyKeyHeader
        return yield* Option.match(key, {
          onNone: () => storeBody(caller, access.modelAccess(caller)),
          onSome: (k) => idempotent(caller, k, access.modelAccess(caller)),
        })
      })

    /** A rerun: the original's rows, checked by every rule of a create. */
    const rerun = (caller: Caller, input: unknown, rerunOf: string) => store(caller, input, access.modelAccess(caller), rerunOf)

    return { create, rerun } as const
  }),
}) {}
