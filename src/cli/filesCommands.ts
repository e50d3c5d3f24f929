import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { MAX_EXPIRES_AFTER_S, MIN_EXPIRES_AFTER_S } from "../domain/file/retention.js"
import type { FileObject } from "../sdk/index.js"
import { choiceOption } from "./choiceOption.js"
import { apiClient, READ_RETRIES } from "./clients.js"
import { group, leaf } from "./commandTree.js"
import { ExitCode, fail, sdk } from "./failure.js"
import { note, out, outDrained } from "./output.js"

const fileId = Args.text({ name: "id" }).pipe(Args.withDescription("The file's id, file-…"))
const json = Options.boolean("json").pipe(Options.withDescription("Print the API's JSON instead of a summary"))

const iso = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString()
const bytes = (n: number) => `${n} ${n === 1 ? "byte" : "bytes"}`

/** One line: its id, purpose, name, size and times. */
export const fileLine = (f: FileObject) =>
  `${f.id} ${f.purpose}: ${JSON.stringify(f.filename)}, ${bytes(f.bytes)}, created ${iso(f.created_at)}` +
  (f.expires_at === null ? "" : `, expires ${iso(f.expires_at)}`)

/** `--expires-after`, checked here so that a bad value is refused before a large file is sent. */
export const checkExpiresAfter = (seconds: Option.Option<number>) =>
  Option.isSome(seconds) && !(seconds.value >= MIN_EXPIRES_AFTER_S && seconds.value <= MAX_EXPIRES_AFTER_S)
    ? fail(`--expires-after must be from ${MIN_EXPIRES_AFTER_S} to ${MAX_EXPIRES_AFTER_S} seconds (an hour to 30 days), got ${seconds.value}`, ExitCode.usage)
    : Effect.void

const upload = leaf(
  "Upload a JSONL file for batches (purpose batch), streamed from disk; prints its id",
  Command.make(
    "upload",
    {
      file: Args.file({ name: "file", exists: "yes" }).pipe(Args.withDescription("JSONL: one OpenAI batch request per line")),
      purpose: choiceOption("purpose", ["batch"]).pipe(Options.withDescription("batch, the only purpose an upload takes"), Options.withDefault("batch" as const)),
      expiresAfter: Options.integer("expires-after").pipe(
        Options.withDescription(`Seconds until the file is deleted, ${MIN_EXPIRES_AFTER_S} to ${MAX_EXPIRES_AFTER_S} (default: 30 days)`),
        Options.optional,
      ),
      json,
    },
    ({ file, purpose, expiresAfter, json }) =>
      Effect.gen(function* () {
        yield* checkExpiresAfter(expiresAfter)
        const client = yield* apiClient()
        const uploaded = yield* sdk(() =>
          client.uploadFile({ file, purpose, ...Option.match(expiresAfter, { onNone: () => ({}), onSome: (s) => ({ expiresAfterSeconds: s }) }) }),
        )
        yield* out(json ? JSON.stringify(uploaded) : uploaded.id)
        if (!json) yield* note(`Uploaded ${fileLine(uploaded)}`)
      }),
  ),
)

const list = leaf(
  "List your files, newest first: uploads (purpose batch) and batches' output and error files (batch_output)",
  Command.make(
    "list",
    {
      purpose: choiceOption("purpose", ["batch", "batch_output"]).pipe(Options.withDescription("Only files of this purpose"), Options.optional),
      limit: Options.integer("limit").pipe(Options.withDescription("How many files, newest first"), Options.withDefault(20)),
      json,
    },
    ({ purpose, limit, json }) =>
      Effect.gen(function* () {
        if (limit < 1) return yield* fail(`--limit must be 1 or more, got ${limit}`, ExitCode.usage)
        const client = yield* apiClient({ maxRetries: READ_RETRIES })
        const files = client.listFiles({ limit: Math.min(limit, 100), ...Option.match(purpose, { onNone: () => ({}), onSome: (p) => ({ purpose: p }) }) })
        for (let shown = 0; shown < limit; shown++) {
          const next = yield* sdk(() => files.next())
          if (next.done === true) break
          yield* outDrained(json ? JSON.stringify(next.value) : fileLine(next.value))
        }
      }),
  ),
)

const get = leaf(
  "Print the file object",
  Command.make("get", { id: fileId }, ({ id }) =>
    Effect.gen(function* () {
      const client = yield* apiClient({ maxRetries: READ_RETRIES })
      yield* out(JSON.stringify(yield* sdk(() => client.getFile(id)), null, 2))
    }),
  ),
)

const content = leaf(
  "Write the file's content to standard output, or to a file with -o (written whole or not at all); streamed, never held in memory",
  Command.make(
    "content",
    {
      id: fileId,
      output: Options.text("output").pipe(Options.withAlias("o"), Options.withDescription("The file to write; - or none for standard output"), Options.optional),
    },
    ({ id, output }) =>
      Effect.gen(function* () {
        const client = yield* apiClient({ maxRetries: READ_RETRIES })
        const path = Option.getOrElse(output, () => "-")
        const written = yield* sdk(() => client.downloadFile(id, { out: path === "-" ? process.stdout : path }))
        if (path !== "-") yield* note(`Wrote ${bytes(written.bytes)} (${written.lines} ${written.lines === 1 ? "line" : "lines"}) of ${id} to ${path}`)
      }),
  ),
)

const remove = leaf(
  "Delete an uploaded file; batches made from it keep their rows (a batch's output and error files go with the batch)",
  Command.make("delete", { id: fileId }, ({ id }) =>
    Effect.gen(function* () {
      const client = yield* apiClient()
      const deleted = yield* sdk(() => client.deleteFile(id))
      yield* out(`Deleted ${deleted.id}`)
    }),
  ),
)

const commands = [upload, list, get, content, remove]
const files = group("files", "Files: batch input uploaded as OpenAI's file-based flow takes it, and batches' output and error files", commands.map((c) => c.node))

export const filesNode = files.node
export const filesCommand = files.own.pipe(
  Command.withSubcommands([upload.command, list.command, get.command, content.command, remove.command]),
)
