import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, HashMap, Option } from "effect"
import { resultLineFromEvent, SluiceClient, WaitTimeoutError } from "../sdk/index.js"
import { loadCredentials } from "./credentials.js"
import { CliFailure, ExitCode, fail, sdk } from "./failure.js"
import { note, out, outDrained } from "./output.js"
import { type ProgressView, progressBar, progressLogLine, type Sample } from "./progress.js"

type Batch = Awaited<ReturnType<SluiceClient["getBatch"]>>

export const apiClient = Effect.suspend(() => {
  const { apiKey, baseUrl } = loadCredentials()
  if (apiKey === undefined)
    return fail("No API key: run `sluice auth login --api-key <key>` or set SLUICE_API_KEY")
  return Effect.succeed(new SluiceClient({ apiKey, baseUrl }))
})

const batchId = Options.text("batch-id").pipe(Options.withDescription("The batch's id, batch_…"))
const json = Options.boolean("json").pipe(Options.withDescription("Print the API's JSON instead of a summary"))

const finalExit: Record<string, number> = {
  completed: ExitCode.ok,
  failed: ExitCode.failed,
  expired: ExitCode.expired,
  cancelled: ExitCode.cancelled,
}

const view = (b: Batch): ProgressView => ({
  id: b.id,
  status: b.status,
  total: b.request_counts.total,
  completed: b.request_counts.completed,
  failed: b.request_counts.failed,
})

const summary = (b: Batch) =>
  `${b.id} ${b.status}: ${b.request_counts.completed + b.request_counts.failed}/${b.request_counts.total} done, ${b.request_counts.failed} failed`

const submit = Command.make(
  "submit",
  {
    inputFile: Options.file("input-file", { exists: "yes" }).pipe(
      Options.withDescription("JSONL: one row per line, as an OpenAI envelope, {custom_id?, body} or {content}"),
    ),
    model: Options.text("model").pipe(
      Options.withDescription("The model for rows that name none (content-only lines need it)"),
      Options.optional,
    ),
    metadata: Options.keyValueMap("metadata").pipe(Options.withDescription("key=value, repeatable"), Options.optional),
    window: Options.choice("window", ["24h"]).pipe(
      Options.withDescription("The completion window; 24h is the only one"),
      Options.withDefault("24h" as const),
    ),
  },
  ({ inputFile, model, metadata }) =>
    Effect.gen(function* () {
      const client = yield* apiClient
      const batches = yield* sdk(() =>
        client.submitBatches({
          inputFile,
          ...Option.match(model, { onNone: () => ({}), onSome: (m) => ({ model: m }) }),
          ...Option.match(metadata, { onNone: () => ({}), onSome: (m) => ({ metadata: Object.fromEntries(HashMap.toEntries(m)) }) }),
        }),
      )
      for (const b of batches) {
        yield* out(b.id)
        yield* note(`Submitted ${b.id}: ${b.request_counts.total} rows`)
      }
      if (batches.length > 1) yield* note(`The file was split into ${batches.length} batches to stay within the per-batch limits.`)
    }),
).pipe(Command.withDescription("Submit a JSONL file as one batch, or several when it exceeds the per-batch limits; prints each batch id"))

const wait = Command.make(
  "wait",
  {
    batchId,
    timeout: Options.float("timeout").pipe(Options.withDescription("Seconds to wait at most"), Options.withDefault(86_400)),
    pollInterval: Options.float("poll-interval").pipe(Options.withDescription("Seconds between polls"), Options.withDefault(2)),
  },
  ({ batchId, timeout, pollInterval }) =>
    Effect.gen(function* () {
      const client = yield* apiClient
      const tty = process.stderr.isTTY === true
      let first: Sample | undefined
      let lastLine = ""
      const onProgress = (b: Batch) => {
        const latest = { atMs: Date.now(), done: b.request_counts.completed + b.request_counts.failed }
        first ??= latest
        if (tty) {
          process.stderr.write(`\r\x1b[2K${progressBar(view(b), first, latest)}`)
          return
        }
        const line = progressLogLine(view(b), first, latest)
        // The rate and ETA change on every poll; a log line is worth printing when the counts or status do.
        const key = `${b.status} ${latest.done}`
        if (key !== lastLine) process.stderr.write(`${line}\n`)
        lastLine = key
      }
      const done = yield* Effect.tryPromise({
        try: () => client.waitForCompletion(batchId, { timeout: timeout * 1000, pollInterval: pollInterval * 1000, onProgress }),
        catch: (error) =>
          new CliFailure({
            message: error instanceof Error ? error.message : String(error),
            exitCode: error instanceof WaitTimeoutError ? ExitCode.timedOut : ExitCode.error,
          }),
      }).pipe(Effect.ensuring(Effect.sync(() => tty && process.stderr.write("\n"))))
      yield* out(summary(done))
      const code = finalExit[done.status] ?? ExitCode.error
      if (code !== ExitCode.ok) return yield* fail(`batch ${done.id} ended ${done.status}`, code)
    }),
).pipe(
  Command.withDescription(
    "Wait until the batch is final, showing progress; exit code 0 completed, 3 failed, 4 expired, 5 cancelled, 124 timed out",
  ),
)

const downloadResults = Command.make(
  "download-results",
  { batchId, out: Options.file("out").pipe(Options.withDescription("The JSONL file to write")) },
  ({ batchId, out: file }) =>
    Effect.gen(function* () {
      const client = yield* apiClient
      const written = yield* sdk(() => client.downloadResultsJsonl(batchId, { out: file }))
      yield* note(`Wrote ${written.lines} results (${written.bytes} bytes) to ${file}`)
    }),
).pipe(Command.withDescription("Download every result line, in submission order, as JSONL"))

const stream = Command.make("stream", { batchId }, ({ batchId }) =>
  Effect.gen(function* () {
    const client = yield* apiClient
    const printed = new Set<string>()
    const events = client.streamEvents(batchId)
    for (;;) {
      const next = yield* sdk(() => events.next())
      if (next.done === true) break
      const line = resultLineFromEvent(next.value)
      if (line === undefined || printed.has(line.id)) continue
      printed.add(line.id)
      yield* outDrained(JSON.stringify(line))
    }
    // Rows settled together by a cancel, failure or expiry have no event of their own: their lines come from the results.
    const results = client.results(batchId)
    for (;;) {
      const next = yield* sdk(() => results.next())
      if (next.done === true) break
      const line = next.value
      if (printed.has(line.id) || line.status === "queued" || line.status === "running") continue
      printed.add(line.id)
      yield* outDrained(JSON.stringify(line))
    }
  }),
).pipe(Command.withDescription("Print each result line as its row finishes, until the batch is done"))

const list = Command.make(
  "list",
  { limit: Options.integer("limit").pipe(Options.withDescription("How many batches, newest first"), Options.withDefault(20)), json },
  ({ limit, json }) =>
    Effect.gen(function* () {
      const client = yield* apiClient
      const batches = client.list({ limit: Math.min(Math.max(limit, 1), 100) })
      for (let shown = 0; shown < limit; shown++) {
        const next = yield* sdk(() => batches.next())
        if (next.done === true) break
        yield* out(json ? JSON.stringify(next.value) : `${summary(next.value)}, created ${new Date(next.value.created_at * 1000).toISOString()}`)
      }
    }),
).pipe(Command.withDescription("List your batches, newest first"))

const get = Command.make("get", { batchId }, ({ batchId }) =>
  Effect.gen(function* () {
    const client = yield* apiClient
    yield* out(JSON.stringify(yield* sdk(() => client.getBatch(batchId)), null, 2))
  }),
).pipe(Command.withDescription("Print the batch object"))

const cancel = Command.make("cancel", { batchId, json }, ({ batchId, json }) =>
  Effect.gen(function* () {
    const client = yield* apiClient
    const b = yield* sdk(() => client.cancel(batchId))
    yield* out(json ? JSON.stringify(b) : summary(b))
  }),
).pipe(Command.withDescription("Cancel the batch: queued rows are cancelled, running rows finish"))

const remove = Command.make("delete", { batchId }, ({ batchId }) =>
  Effect.gen(function* () {
    const client = yield* apiClient
    const deleted = yield* sdk(() => client.delete(batchId))
    yield* out(`Deleted ${deleted.id}`)
  }),
).pipe(Command.withDescription("Delete the batch and its results"))

export const batchCommand = Command.make("batch").pipe(
  Command.withDescription("Submit, watch and collect batches"),
  Command.withSubcommands([submit, wait, downloadResults, stream, list, get, cancel, remove]),
)
