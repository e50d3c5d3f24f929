import { Effect } from "effect"
import { createReadStream } from "node:fs"
import { writeFile } from "node:fs/promises"
import { createInterface } from "node:readline"
import { CHAT_ENDPOINT, isBatchEndpoint } from "../domain/batch/endpoint.js"
import { type Batch, type BatchEndpoint, type FileBatchRequest, FinalBatchStatuses, SluiceApiError, type SluiceClient } from "../sdk/index.js"
import { CliFailure, ExitCode, fail, sdk } from "./failure.js"
import { fileLine } from "./filesCommands.js"
import { note } from "./output.js"

/**
 * The endpoint an upload's batch calls when `--endpoint` names none: the first line's `url` that names
 * one, as an inline batch takes it, else chat. A line that is not JSON ends the search: the create
 * names it.
 */
export const endpointOf = async (path: string): Promise<BatchEndpoint> => {
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY })
  try {
    for await (const line of lines) {
      if (line.trim() === "") continue
      let row: unknown
      try {
        row = JSON.parse(line)
      } catch {
        return CHAT_ENDPOINT
      }
      const url = typeof row === "object" && row !== null ? (row as { url?: unknown }).url : undefined
      if (typeof url === "string") return isBatchEndpoint(url) ? url : CHAT_ENDPOINT
    }
    return CHAT_ENDPOINT
  } finally {
    lines.close()
  }
}

/**
 * Uploads the file, then `use`s it (a create, an estimate). A refusal (4xx) stored nothing, so the upload
 * is deleted with it; after any other failure the batch may exist, and the upload is kept and named.
 */
export const withUpload = <A>(
  client: SluiceClient,
  inputFile: string,
  use: (fileId: string) => Promise<A>,
  options: { readonly keep: boolean },
) =>
  Effect.gen(function* () {
    const uploaded = yield* sdk(() => client.uploadFile({ file: inputFile }))
    yield* note(`Uploaded ${fileLine(uploaded)}`)
    const dropUpload = Effect.promise(() => client.deleteFile(uploaded.id).then(() => true, () => false))
    const used = yield* Effect.tryPromise({ try: () => use(uploaded.id), catch: (error) => error }).pipe(
      Effect.catchAll((error) =>
        Effect.gen(function* () {
          const message = error instanceof Error ? error.message : String(error)
          const refused = error instanceof SluiceApiError && error.status >= 400 && error.status < 500
          const dropped = refused && (yield* dropUpload)
          const after = dropped
            ? `; the upload ${uploaded.id} was deleted`
            : `; the upload ${uploaded.id} is kept (sluice files delete ${uploaded.id} removes it)`
          return yield* Effect.fail(new CliFailure({ message: `${message}${after}`, exitCode: ExitCode.error }))
        }),
      ),
    )
    if (!options.keep && !(yield* dropUpload)) yield* note(`The upload ${uploaded.id} could not be deleted: sluice files delete ${uploaded.id} removes it`)
    return used
  })

export const createFromUpload = (client: SluiceClient, inputFile: string, request: Omit<FileBatchRequest, "input_file_id">) =>
  withUpload(client, inputFile, (input_file_id): Promise<Batch> => client.createBatch({ ...request, input_file_id }), { keep: true })

export type FileKind = "output" | "error"

/**
 * A final file-based batch's output or error file written to `out` (a path, or standard output for `-`);
 * one the batch has none of (no row completed, or none did not) is written empty.
 */
export const saveBatchFile = (client: SluiceClient, batch: Batch, kind: FileKind, out: string) =>
  Effect.gen(function* () {
    const id = kind === "output" ? batch.output_file_id : batch.error_file_id
    const where = out === "-" ? "standard output" : out
    if (id === null) {
      if (out !== "-") {
        yield* Effect.tryPromise({
          try: () => writeFile(out, ""),
          catch: (error) => new CliFailure({ message: `cannot write ${out}: ${(error as Error).message}`, exitCode: ExitCode.error }),
        })
      }
      const none = kind === "output" ? "no row completed" : "every row completed"
      return yield* note(`${batch.id} has no ${kind} file (${none}): ${out === "-" ? "wrote nothing" : `wrote an empty ${out}`}`)
    }
    const written = yield* sdk(() => client.downloadFile(id, { out: out === "-" ? process.stdout : out }))
    yield* note(`Wrote ${written.lines} ${written.lines === 1 ? "line" : "lines"} (${written.bytes} bytes) of ${kind} file ${id} to ${where}`)
  })

/** Output and error files belong to a batch created from a file, once it is final. */
export const checkHasFiles = (batch: Batch) => {
  if (batch.input_file_id === null) {
    return fail(`${batch.id} was not created from a file, so it has no output or error file: --out writes its results.jsonl`)
  }
  if (!FinalBatchStatuses.has(batch.status)) {
    return fail(`${batch.id} is ${batch.status}: its output and error files are made once it is final (sluice batch wait --batch-id ${batch.id})`)
  }
  return Effect.void
}
