import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { FileDeleted, FileList, FileObject } from "../domain/api/FileObject.js"
import { MAX_EXPIRES_AFTER_S, MIN_EXPIRES_AFTER_S } from "../domain/file/retention.js"
import { MAX_BATCH_FILE_LINES, MAX_FILE_BYTES } from "../domain/file/upload.js"
import { BadRequest, Forbidden, NotFound, PayloadTooLarge, TooManyRequests, Unauthorized } from "./errors.js"

const FilePath = Schema.Struct({ file_id: Schema.String })
/** Query values stay strings here: the handler answers a bad one with the API's own 400 envelope. */
const param = (description: string) => Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))).annotations({ description })

const ListParams = Schema.Struct({
  purpose: param("Only files with this purpose"),
  limit: param("1 to 10000, default 10000"),
  after: param("A file id: the files after it in `order`"),
  order: param("`desc` (newest first, the default) or `asc`"),
})

const FileContent = HttpApiSchema.Text({ contentType: "application/octet-stream" }).annotations({
  description: "The file's bytes as uploaded, streamed from the event log",
})

/** The multipart body OpenAI's SDKs send; read and checked by the handler as it streams (src/http/fileUpload.ts). */
const uploadBody = OpenApi.annotations({
  override: {
    requestBody: {
      required: true,
      content: {
        "multipart/form-data": {
          schema: {
            type: "object",
            required: ["file", "purpose"],
            properties: {
              file: { type: "string", format: "binary", description: `JSONL, one request a line: at most ${MAX_FILE_BYTES} bytes and ${MAX_BATCH_FILE_LINES} lines` },
              purpose: { type: "string", enum: ["batch"] },
              "expires_after[anchor]": { type: "string", enum: ["created_at"] },
              "expires_after[seconds]": { type: "integer", minimum: MIN_EXPIRES_AFTER_S, maximum: MAX_EXPIRES_AFTER_S },
            },
          },
        },
      },
    },
  },
})

/** OpenAI's files, for batch input: uploaded, listed, read and deleted as its SDKs do. */
export const FilesGroup = HttpApiGroup.make("files")
  .add(
    HttpApiEndpoint.post("create", "/v1/files")
      .addSuccess(FileObject)
      .addError(BadRequest)
      .addError(PayloadTooLarge)
      .annotateContext(uploadBody)
      .annotateContext(
        OpenApi.annotations({
          description:
            "Uploads a batch input file (multipart `file` and `purpose: batch`, optionally `expires_after`), streamed to the event log " +
            "as it arrives. One too large (413), with too many lines, without a filename, or with another purpose (400) stores nothing.",
        }),
      ),
  )
  .add(HttpApiEndpoint.get("list", "/v1/files").setUrlParams(ListParams).addSuccess(FileList).addError(BadRequest))
  .add(HttpApiEndpoint.get("retrieve", "/v1/files/:file_id").setPath(FilePath).addSuccess(FileObject))
  .add(HttpApiEndpoint.get("content", "/v1/files/:file_id/content").setPath(FilePath).addSuccess(FileContent))
  .add(HttpApiEndpoint.del("delete", "/v1/files/:file_id").setPath(FilePath).addSuccess(FileDeleted))
  .addError(Unauthorized)
  .addError(Forbidden)
  // Also "batch inference is unavailable at the moment", while the event log cannot be reached.
  .addError(NotFound)
  .addError(TooManyRequests)
