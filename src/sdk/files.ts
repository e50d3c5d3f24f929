import { openAsBlob } from "node:fs"
import { basename } from "node:path"
import type { FileDeleted as FileDeletedSchema, FileList as FileListSchema, FileObject as FileObjectSchema } from "../domain/api/FileObject.js"
import type { BatchEndpoint } from "../domain/batch/endpoint.js"
import type { Priority } from "../domain/scheduling/priority.js"
import { SluiceConnectionError } from "./errors.js"

/** OpenAI's File object: an upload (`purpose: "batch"`) or a batch's output or error file (`"batch_output"`). */
export type FileObject = typeof FileObjectSchema.Type
export type FileList = typeof FileListSchema.Type
export type FileDeleted = typeof FileDeletedSchema.Type
export type { BatchEndpoint }

export interface FileUpload {
  /** A path to read from disk as it is sent, or the content itself. */
  readonly file: string | Blob | Uint8Array
  /** Default: the path's base name, a `File`'s own name, else `input.jsonl`. */
  readonly filename?: string
  /** Default `batch`, the only purpose an upload takes. */
  readonly purpose?: "batch"
  /** Seconds after the upload until it expires (3600 to 2592000); default the server's 30 days. */
  readonly expiresAfterSeconds?: number
  readonly signal?: AbortSignal
}

export interface ListFilesOptions {
  /** `batch` for uploads, `batch_output` for batches' output and error files; default both. */
  readonly purpose?: string
  /** Files a page; default 100. */
  readonly limit?: number
  /** `desc` (newest first, the default) or `asc`. */
  readonly order?: "asc" | "desc"
}

/** OpenAI's create body for a batch whose rows are an uploaded file. */
export interface FileBatchRequest {
  readonly input_file_id: string
  readonly endpoint: BatchEndpoint
  readonly metadata?: Record<string, string> | null
  /** Its rows' priority on their models; default standard. */
  readonly priority?: Priority
  /** Accepted and ignored, as the API ignores it: the server sets the window. */
  readonly completion_window?: string
}

export const fileBatchBody = (request: FileBatchRequest) => ({
  input_file_id: request.input_file_id,
  endpoint: request.endpoint,
  completion_window: request.completion_window ?? "24h",
  ...(request.metadata === undefined ? {} : { metadata: request.metadata }),
  ...(request.priority === undefined ? {} : { priority: request.priority }),
})

/** One line of a batch's output or error file, in OpenAI's output-line format. */
export interface BatchOutputLine {
  readonly id: string
  readonly custom_id: string
  readonly response: {
    readonly status_code: number
    readonly request_id: string
    readonly body: Record<string, unknown>
  } | null
  readonly error: { readonly code: string; readonly message: string } | null
}

/** The multipart form of `POST /v1/files`; a path is read from disk as the form is sent, never whole. */
export const uploadForm = async (upload: FileUpload): Promise<FormData> => {
  const { file } = upload
  const blob = typeof file === "string" ? await openAsBlob(file) : file instanceof Blob ? file : new Blob([file])
  const filename =
    upload.filename ?? (typeof file === "string" ? basename(file) : typeof File !== "undefined" && file instanceof File ? file.name : "input.jsonl")
  const form = new FormData()
  form.set("purpose", upload.purpose ?? "batch")
  if (upload.expiresAfterSeconds !== undefined) {
    form.set("expires_after[anchor]", "created_at")
    form.set("expires_after[seconds]", String(upload.expiresAfterSeconds))
  }
  form.set("file", blob, filename)
  return form
}

/** A response body's bytes as they arrive; the body is cancelled when the caller stops early. */
export async function* bodyBytes(response: Response, method: string, url: string): AsyncIterableIterator<Uint8Array> {
  if (response.body === null) return
  const reader = response.body.getReader()
  let done = false
  try {
    for (;;) {
      let next: Awaited<ReturnType<typeof reader.read>>
      try {
        next = await reader.read()
      } catch (error) {
        done = true
        throw new SluiceConnectionError(method, url, error)
      }
      if (next.done) {
        done = true
        return
      }
      yield next.value
    }
  } finally {
    if (!done) await reader.cancel().catch(() => undefined)
  }
}

/** Each non-blank line of JSONL bytes, parsed; a line that is not JSON throws naming its number and `source`. */
export async function* jsonLines<T>(bytes: AsyncIterable<Uint8Array>, source: string): AsyncIterableIterator<T> {
  const decoder = new TextDecoder()
  let rest = ""
  let line = 0
  const parse = (text: string): T => {
    try {
      return JSON.parse(text) as T
    } catch (error) {
      throw new Error(`${source}: line ${line} is not JSON: ${(error as Error).message}`)
    }
  }
  for await (const chunk of bytes) {
    const pieces = (rest + decoder.decode(chunk, { stream: true })).split("\n")
    rest = pieces.pop()!
    for (const piece of pieces) {
      line++
      if (piece.trim() !== "") yield parse(piece)
    }
  }
  rest += decoder.decode()
  line++
  if (rest.trim() !== "") yield parse(rest)
}
