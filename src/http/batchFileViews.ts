import { HttpServerResponse } from "@effect/platform"
import { Effect, Option, Stream } from "effect"
import { FinalBatchStatuses } from "../domain/api/BatchStatus.js"
import { batchFiles, batchOfFileId } from "../domain/file/batchFiles.js"
import { batchFileReads } from "../projections/batchFileReads.js"
import type { BatchRow } from "../projections/batchReads.js"
import { ReadModel } from "../projections/ReadModel.js"
import { BatchAccess } from "./batchAccess.js"
import { badRequest, notFound } from "./errors.js"

const PAGE_ROWS = 2_000
const PAGE_BYTES = 4 * 1024 * 1024

/** OpenAI's File object for a batch's output or error file. */
export interface BatchFileObject {
  readonly id: string
  readonly object: "file"
  readonly bytes: number
  readonly created_at: number
  readonly filename: string
  readonly purpose: "batch_output"
  readonly status: "processed"
  readonly expires_at: null
  readonly status_details: null
}

const finishedAt = (row: BatchRow) => row.completed_at ?? row.failed_at ?? row.expired_at ?? row.cancelled_at ?? row.created_at

const fileNotFound = (fileId: string) => notFound(`No file found with id '${fileId}'`, "file_not_found")

/**
 * The output and error files of the caller's final file-based batches (src/domain/file/batchFiles.ts):
 * answered from the batch's results, named by ids no upload can take, gone with the batch.
 */
export class BatchFileViews extends Effect.Service<BatchFileViews>()("Http/BatchFileViews", {
  effect: Effect.gen(function* () {
    const access = yield* BatchAccess
    const reads = batchFileReads(yield* ReadModel)

    /** The view `fileId` names, when it is one and exists for the caller; undefined for an uploaded file's id. */
    const find = (accountId: string, fileId: string) => {
      const named = batchOfFileId(fileId)
      if (named === undefined) return undefined
      const row = access.batches.ofAccount(accountId, named.batchId)
      const exists = row !== undefined && FinalBatchStatuses.has(row.status) && batchFiles(row)[`${named.kind}_file_id`] === fileId
      return { exists, row, kind: named.kind }
    }

    const toObject = (row: BatchRow, kind: "output" | "error", fileId: string): BatchFileObject => ({
      id: fileId,
      object: "file",
      bytes: reads.bytes(row.id, kind),
      created_at: finishedAt(row),
      filename: `${row.id}_${kind}.jsonl`,
      purpose: "batch_output",
      status: "processed",
      expires_at: null,
      status_details: null,
    })

    /** `GET /v1/files/{id}` for a view id: its File object, or 404; `undefined` when the id is not a view's. */
    const object = (accountId: string, fileId: string) => {
      const found = find(accountId, fileId)
      if (found === undefined) return undefined
      return found.exists ? Effect.succeed(toObject(found.row!, found.kind, fileId)) : Effect.fail(fileNotFound(fileId))
    }

    /** `GET /v1/files/{id}/content` for a view id: its lines, page by page as the client takes them. */
    const content = (accountId: string, fileId: string) => {
      const found = find(accountId, fileId)
      if (found === undefined) return undefined
      if (!found.exists) return Effect.fail(fileNotFound(fileId))
      const batchId = found.row!.id
      const kind = found.kind
      return Effect.succeed(
        HttpServerResponse.stream(
          Stream.paginate(0, (from) => {
            const page = reads.page(batchId, kind, from, PAGE_ROWS, PAGE_BYTES)
            return [page.bytes as Uint8Array, Option.fromNullable(page.next)] as const
          }).pipe(Stream.filter((bytes) => bytes.byteLength > 0)),
          { contentType: "application/jsonl", headers: { "content-length": String(reads.bytes(batchId, kind)) } },
        ),
      )
    }

    /** The File objects of every view of the caller's, oldest batch first: for the files list. */
    const all = (accountId: string): Array<BatchFileObject> =>
      reads.fileBatchesOf(accountId).flatMap((row) => {
        const ids = batchFiles(row)
        return [
          ...(ids.output_file_id === null ? [] : [toObject(row, "output", ids.output_file_id)]),
          ...(ids.error_file_id === null ? [] : [toObject(row, "error", ids.error_file_id)]),
        ]
      })

    /** `DELETE /v1/files/{id}` for a view id: refused, naming the batch it goes with; `undefined` when the id is not a view's. */
    const remove = (accountId: string, fileId: string) => {
      const found = find(accountId, fileId)
      if (found === undefined) return undefined
      if (!found.exists) return Effect.fail(fileNotFound(fileId))
      return Effect.fail(
        badRequest(
          `File '${fileId}' is batch ${found.row!.id}'s ${found.kind} file, read from its results: it is deleted with the batch (DELETE /v1/batches/${found.row!.id})`,
          "file_id",
        ),
      )
    }

    return { object, content, all, remove } as const
  }),
}) {}
