import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Either, Exit, Schedule, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { ActorClock } from "../actors/ActorClock.js"
import { FileRetention } from "../actors/FileRetention.js"
import { appendSettled } from "../actors/unknownOutcome.js"
import { batchFiles, batchOfFileId } from "../domain/file/batchFiles.js"
import { type FileCreated, filePartSubject, fileSubject, oneFile } from "../domain/file/events.js"
import { isUploadedFileId, uploadedFileId } from "../domain/file/fileId.js"
import { expiresAt } from "../domain/file/retention.js"
import { decideUpload, makeLineSplitter, MAX_FILE_BYTES, type UploadRefused } from "../domain/file/upload.js"
import { EventLog, isOutcomeUnknown, LogUnavailable } from "../eventlog/EventLog.js"
import { type FileRow, type FileTombstone, fileReads } from "../projections/fileReads.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import type { Caller } from "./auth.js"
import { BatchAccess } from "./batchAccess.js"
import { type ApiError, badRequest, notFound, PayloadTooLarge } from "./errors.js"
import { Disconnected, Malformed, receiveUpload } from "./fileUpload.js"
import { type BatchFileObject, BatchFileViews } from "./batchFileViews.js"
import { parseLimit } from "./pageParams.js"

/** A form's fields and part headers, beyond its file: a body declared larger than a file and this is refused unread. */
const FORM_ROOM = 4 * 1024 * 1024
const MAX_LIST_LIMIT = 10_000
const PARTS_IN_FLIGHT = 8
const PURGE_REFUSED = Schedule.spaced("500 millis").pipe(Schedule.intersect(Schedule.recurs(4)))
const encoder = new TextEncoder()
const seconds = (ms: number) => Math.floor(ms / 1000)
const isoSeconds = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z")

export const fileNotFound = (id: string) => notFound(`No file found with id '${id}'`, "file_not_found")

/** The owner's 404 for a file deleted or expired: it says so, and when. */
export const fileDeleted = (id: string, deletedAt: number, reason: "deleted" | "expired") =>
  notFound(
    `File '${id}' was deleted at ${isoSeconds(deletedAt)} (Unix ${seconds(deletedAt)})${reason === "expired" ? ", when it expired" : ""}; its content is gone`,
    "file_deleted",
  )

const refused = (r: UploadRefused) =>
  r.status === 413
    ? new PayloadTooLarge({ error: { message: r.message, type: "invalid_request_error", param: r.param, code: "payload_too_large" } })
    : badRequest(r.message, r.param)

/** OpenAI's File object. */
export const fileObject = (row: FileRow) => ({
  id: row.id,
  object: "file" as const,
  bytes: row.bytes,
  created_at: seconds(row.created_at),
  filename: row.filename,
  purpose: row.purpose,
  status: "processed" as const,
  expires_at: row.expires_at === null ? null : seconds(row.expires_at),
  status_details: null,
})
export type FileObject = ReturnType<typeof fileObject>

type Param = string | ReadonlyArray<string> | undefined
export interface ListParams {
  readonly purpose?: Param
  readonly limit?: Param
  readonly after?: Param
  readonly order?: Param
}

const single = (name: string, value: Param) =>
  typeof value === "string" || value === undefined ? Effect.succeed(value) : Effect.fail(badRequest(`'${name}' may be given only once`, name))

/**
 * Files: OpenAI's uploaded files, kept in the event log as raw parts with a `file_created` naming them
 * (src/domain/file/events.ts). An upload streams to the log as it arrives, and one refused, cut short or
 * failing leaves nothing. Reads come from the read model, content straight from the log's parts.
 */
export class Files extends Effect.Service<Files>()("Http/Files", {
  effect: Effect.gen(function* () {
    const access = yield* BatchAccess
    const log = yield* EventLog
    const projector = yield* Projector
    const retention = yield* FileRetention
    const clock = yield* ActorClock
    const reads = fileReads(yield* ReadModel)

    /** Everything an upload appended, gone; a purge the log refuses now is left to the sweep of abandoned uploads. */
    const purgeUpload = (fileId: string) =>
      log.purge(oneFile(fileId)).pipe(
        Effect.retry(PURGE_REFUSED),
        Effect.catchAll((e) => Effect.logWarning(`the parts of refused upload ${fileId} could not be purged yet; the sweep of abandoned uploads will`, e)),
      )

    const uploadError = (e: ApiError | Malformed | Disconnected | LogUnavailable): ApiError => {
      if (e instanceof Malformed) return badRequest(e.message, "file")
      if (e instanceof Disconnected) return badRequest("The upload ended before its body did: nothing was stored", "file")
      if (e instanceof LogUnavailable) return access.logDown(e)
      return e
    }

    const create = (caller: Caller) =>
      Effect.gen(function* () {
        yield* access.reachable
        const request = yield* HttpServerRequest.HttpServerRequest
        const declared = Number(request.headers["content-length"] ?? Number.NaN)
        if (declared > MAX_FILE_BYTES + FORM_ROOM) {
          return yield* Effect.fail(refused({ status: 413, message: `The upload is larger than the limit of ${MAX_FILE_BYTES} bytes (200 MB) for a file`, param: "file" }))
        }
        const id = uploadedFileId(randomBytes(24))
        // Once `file_created` may be in the log, the parts are the file's: never purged by a failure here.
        let named = false
        const store = Effect.gen(function* () {
          const received = yield* receiveUpload(log, id, NodeHttpServerRequest.toIncomingMessage(request))
          const decided = decideUpload(received.form)
          if (Either.isLeft(decided)) return yield* Effect.fail(refused(decided.left))
          const upload = decided.right
          const createdAt = yield* clock.currentTimeMillis
          const event: FileCreated = {
            type: "file_created",
            file_id: id,
            account_id: caller.account.id,
            key_id: caller.keyId,
            filename: upload.filename,
            purpose: upload.purpose,
            bytes: upload.bytes,
            lines: upload.lines,
            created_at: createdAt,
            expires_at: expiresAt(createdAt, upload.expiresAfter),
            content: received.stored,
          }
          named = true
          const written = yield* appendSettled(log, [
            { subject: fileSubject(id, "file_created"), data: encoder.encode(JSON.stringify(event)), expectLastSubjectSeq: 0, msgId: `${id}:file_created` },
          ]).pipe(
            Effect.tapError((e) => Effect.sync(() => void (named = isOutcomeUnknown(e)))),
            Effect.uninterruptible,
          )
          yield* projector.awaitSeq(written[0]!.seq)
          yield* retention.planned(id)
          return fileObject(reads.one(id)!)
        })
        return yield* store.pipe(
          Effect.onExit((exit) => (Exit.isSuccess(exit) || named ? Effect.void : purgeUpload(id))),
          Effect.catchTag("WrongLastSequence", (e) => Effect.die(e)),
          Effect.mapError(uploadError),
        )
      })

    /** A file gone: its owner is told when (deleted, or expired), anyone else that no such file exists. */
    const gone = (accountId: string, id: string, row: FileRow | undefined) => {
      if (row !== undefined && row.deleted_at !== null) return fileDeleted(id, row.deleted_at, row.reason ?? "deleted")
      const tombstone: FileTombstone | undefined = reads.tombstoneOf(accountId, id)
      return tombstone === undefined ? fileNotFound(id) : fileDeleted(id, tombstone.deleted_at, tombstone.reason)
    }

    const views = yield* BatchFileViews

    /** The caller's uploaded file, readable. */
    const owned = (accountId: string, id: string) => {
      const row = isUploadedFileId(id) ? reads.ofAccount(accountId, id) : undefined
      return row !== undefined && row.status === "processed" ? Effect.succeed(row) : Effect.fail(gone(accountId, id, row))
    }

    const list = (caller: Caller, params: ListParams) =>
      Effect.gen(function* () {
        yield* access.reachable
        const purpose = yield* single("purpose", params.purpose)
        const limit = yield* parseLimit(params.limit, MAX_LIST_LIMIT, MAX_LIST_LIMIT)
        const order = yield* single("order", params.order)
        if (order !== undefined && order !== "asc" && order !== "desc") {
          return yield* Effect.fail(badRequest(`'order' must be 'asc' or 'desc', got '${order}'`, "order"))
        }
        const after = yield* single("after", params.after)
        // Without views to merge, uploads alone are paged in log order, and every page agrees with the first.
        const uploadsOnly = purpose === "batch" || (purpose === undefined && views.all(caller.account.id).length === 0)
        let afterSeq: number | undefined
        if (after !== undefined && uploadsOnly) {
          const row = isUploadedFileId(after) ? reads.ofAccount(caller.account.id, after) : undefined
          if (row === undefined) return yield* Effect.fail(badRequest(`'after' must be the id of one of your files, got '${after}'`, "after"))
          afterSeq = row.seq
        }
        const page = (data: ReadonlyArray<FileObject | BatchFileObject>, hasMore: boolean) => ({
          object: "list" as const,
          data,
          first_id: data[0]?.id ?? null,
          last_id: data[data.length - 1]?.id ?? null,
          has_more: hasMore,
        })
        if (uploadsOnly) {
          const rows = reads.page({ accountId: caller.account.id, purpose, order: order ?? "desc", afterSeq, limit })
          return page(rows.slice(0, limit).map(fileObject), rows.length > limit)
        }
        // A batch's output and error files (purpose `batch_output`) join the list, ordered with the uploads by
        // when each was made (a view: when its batch ended), then by id.
        const uploads = purpose === undefined ? reads.page({ accountId: caller.account.id, purpose, order: "asc", afterSeq: undefined, limit: MAX_LIST_LIMIT }).map(fileObject) : []
        const all = [...uploads, ...(purpose === undefined || purpose === "batch_output" ? views.all(caller.account.id) : [])]
        const sign = order === "asc" ? 1 : -1
        all.sort((a, b) => sign * (a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)))
        let from = 0
        if (after !== undefined) {
          from = all.findIndex((f) => f.id === after) + 1
          if (from === 0) return yield* Effect.fail(badRequest(`'after' must be the id of one of your files, got '${after}'`, "after"))
        }
        return page(all.slice(from, from + limit), all.length > from + limit)
      })

    const get = (caller: Caller, id: string) =>
      Effect.gen(function* () {
        yield* access.reachable
        const view = views.object(caller.account.id, id)
        if (view !== undefined) return yield* view
        return fileObject(yield* owned(caller.account.id, id))
      })

    /** The file's bytes straight from its parts in the log, a part at a time; cut short if the log no longer holds them all. */
    const bytesOf = (row: FileRow): Stream.Stream<Uint8Array, LogUnavailable | Truncated> => {
      if (row.parts === 0) return Stream.empty
      let sent = 0
      // A few parts in flight, not the default 64 (16 MiB of them on NATS), for each of a create's two reads.
      return log.read(filePartSubject(row.id), row.first_seq, { pullMessages: PARTS_IN_FLIGHT }).pipe(
        Stream.takeWhile((m) => m.seq <= row.last_seq),
        Stream.map((m) => {
          sent += m.data.length
          return m.data
        }),
        Stream.concat(Stream.suspend(() => (sent === row.bytes ? Stream.empty : Stream.fail(new Truncated({ id: row.id, sent, bytes: row.bytes }))))),
      )
    }

    const content = (caller: Caller, id: string) =>
      Effect.gen(function* () {
        yield* access.reachable
        const view = views.content(caller.account.id, id)
        if (view !== undefined) return yield* view
        const row = yield* owned(caller.account.id, id)
        return HttpServerResponse.stream(
          bytesOf(row).pipe(Stream.tapError((e) => Effect.logWarning(`the content of file ${row.id} was cut short`, e))),
          { contentType: "application/octet-stream", contentLength: row.bytes },
        )
      })

    const remove = (caller: Caller, id: string) =>
      Effect.gen(function* () {
        yield* access.reachable
        const view = views.remove(caller.account.id, id)
        if (view !== undefined) return yield* view
        yield* owned(caller.account.id, id)
        const done = yield* retention.remove(id, "deleted").pipe(Effect.mapError(access.logDown))
        if (done === "gone") return yield* Effect.fail(gone(caller.account.id, id, reads.one(id)))
        return { id, object: "file" as const, deleted: true as const }
      })

    /**
     * For a batch created from a file: the account's uploaded file, readable and of purpose `batch`. An id
     * that is not the account's file, or is no longer, answers 404 as `GET /v1/files/{id}` does; a batch's
     * output or error file 400, naming `input_file_id`.
     */
    const usable = (accountId: string, fileId: string): Effect.Effect<FileObject, ApiError> =>
      Effect.gen(function* () {
        yield* access.reachable
        const view = batchOfFileId(fileId)
        if (view !== undefined) {
          const batch = access.batches.ofAccount(accountId, view.batchId)
          const named = batch === undefined ? undefined : batchFiles(batch)[view.kind === "output" ? "output_file_id" : "error_file_id"]
          if (named !== fileId) return yield* Effect.fail(fileNotFound(fileId))
          return yield* Effect.fail(
            badRequest(`'input_file_id' must name a file uploaded with purpose 'batch'; '${fileId}' is a batch's ${view.kind} file (purpose 'batch_output')`, "input_file_id"),
          )
        }
        const row = yield* owned(accountId, fileId)
        if (row.purpose !== "batch") {
          return yield* Effect.fail(badRequest(`'input_file_id' must name a file uploaded with purpose 'batch'; '${fileId}' has purpose '${row.purpose}'`, "input_file_id"))
        }
        return fileObject(row)
      })

    /** The file's lines, each without its newline (`\n` or `\r\n`), in order: as many as its `lines` count (domain/file/upload.ts). */
    const lines = (accountId: string, fileId: string): Stream.Stream<string, ApiError> =>
      Stream.unwrap(
        Effect.map(usable(accountId, fileId), (file) =>
          bytesOf(reads.one(file.id)!).pipe(
            // The log reads up to 8 MiB of parts at once: decoded and split a page at a time, each page's strings
            // outlived the young generation and a create's first pass grew the heap by the whole file.
            Stream.rechunk(1),
            Stream.decodeText("utf-8"),
            (text) => Stream.suspend(() => {
              const splitter = makeLineSplitter()
              return text.pipe(Stream.mapConcat(splitter.push), Stream.concat(Stream.suspend(() => Stream.fromIterable(splitter.end()))))
            }),
            Stream.mapError((e) => (e._tag === "Truncated" ? fileNotFound(fileId) : access.logDown(e))),
          ),
        ),
      )

    return { create, list, get, content, remove, usable, lines } as const
  }),
  dependencies: [BatchFileViews.Default],
}) {}

/** The log no longer holds every part of a file the read model still shows (purged meanwhile). */
export class Truncated extends Error {
  readonly _tag = "Truncated"
  constructor(readonly info: { readonly id: string; readonly sent: number; readonly bytes: number }) {
    super(`file ${info.id}: ${info.sent} of ${info.bytes} bytes left in the log`)
  }
}
