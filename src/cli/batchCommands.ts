import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { type RerunOptions, WaitTimeoutError } from "../sdk/index.js"
import { finalExit, progressReporter, summary } from "./batchProgress.js"
import { stream } from "./batchStream.js"
import { apiClient, READ_RETRIES } from "./clients.js"
import { group, leaf } from "./commandTree.js"
import { CliFailure, ExitCode, fail, sdk } from "./failure.js"
import { metadataOption } from "./metadataOption.js"
import { note, out } from "./output.js"

const batchId = Options.text("batch-id").pipe(Options.withDescription("The batch's id, batch_…"))
const json = Options.boolean("json").pipe(Options.withDescription("Print the API's JSON instead of a summary"))

const rows = (n: number) => `${n} ${n === 1 ? "row" : "rows"}`

const timedOut = (error: WaitTimeoutError, seconds: number) => {
  const c = error.requestCounts
  return (
    `batch ${error.batchId} did not finish within --timeout ${seconds}: it is still ${error.status}, ` +
    `${c.completed + c.failed} of ${c.total} requests finished (${c.completed} completed, ${c.failed} failed). ` +
    "Run wait again, or give a longer --timeout."
  )
}

const submit = leaf(
  "Submit a JSONL file as one batch, or several when it exceeds the per-batch limits; prints each batch id",
  Command.make(
    "submit",
    {
      inputFile: Options.file("input-file", { exists: "yes" }).pipe(
        Options.withDescription("JSONL: one row per line, as an OpenAI envelope, {custom_id?, body} or {content}"),
      ),
      model: Options.text("model").pipe(
        Options.withDescription("The model for rows that name none (content-only lines need it)"),
        Options.optional,
      ),
      metadata: metadataOption,
      window: Options.text("window").pipe(
        Options.withDescription("Accepted and ignored, as the API ignores a sent completion_window: the server sets it"),
        Options.optional,
      ),
      dryRun: Options.boolean("dry-run").pipe(
        Options.withDescription("Validate and estimate (tokens, cost, rows ahead, ETA) without creating anything; prints each estimate's JSON"),
      ),
    },
    ({ inputFile, model, metadata, window, dryRun }) =>
      Effect.gen(function* () {
        const client = yield* apiClient()
        const input = {
          inputFile,
          ...Option.match(model, { onNone: () => ({}), onSome: (m: string) => ({ model: m }) }),
          ...(metadata === undefined ? {} : { metadata }),
        }
        if (dryRun) {
          const estimates = yield* sdk(() => client.estimateBatches(input))
          for (const e of estimates) {
            yield* out(JSON.stringify(e))
            const eta = e.estimated_completion_at === null ? "no rate measured yet" : new Date(e.estimated_completion_at * 1000).toISOString()
            yield* note(
              `Would submit ${rows(e.request_counts.total)}: $${e.cost_usd_min}–$${e.cost_usd_max} (${e.tokens} tokens), done by ${eta}` +
                `${e.fits.unfinished_batches ? "" : "; refused now: too many unfinished batches"}${e.fits.daily_quota ? "" : "; may exceed today's quota"}`,
            )
          }
          return
        }
        const batches = yield* sdk(() => client.submitBatches(input))
        for (const b of batches) {
          yield* out(b.id)
          yield* note(`Submitted ${b.id}: ${rows(b.request_counts.total)}`)
        }
        if (batches.length > 1) yield* note(`The file was split into ${batches.length} batches to stay within the per-batch limits.`)
        const [first] = batches
        if (Option.isSome(window) && first !== undefined && window.value !== first.completion_window) {
          yield* note(`--window ${window.value} is ignored, as the API ignores a sent completion_window: the server gave ${first.completion_window}`)
        }
      }),
  ),
)

const wait = leaf(
  "Wait until the batch is final, showing progress; exit code 0 completed, 3 failed, 4 expired, 5 cancelled, 124 timed out",
  Command.make(
  "wait",
  {
    batchId,
    timeout: Options.float("timeout").pipe(Options.withDescription("Seconds to wait at most"), Options.withDefault(86_400)),
    pollInterval: Options.float("poll-interval").pipe(Options.withDescription("Seconds between polls"), Options.withDefault(2)),
  },
  ({ batchId, timeout, pollInterval }) =>
    Effect.gen(function* () {
      const client = yield* apiClient()
      const { onProgress, end } = progressReporter()
      const done = yield* Effect.tryPromise({
        try: () => client.waitForCompletion(batchId, { timeout: timeout * 1000, pollInterval: pollInterval * 1000, onProgress }),
        catch: (error) =>
          error instanceof WaitTimeoutError
            ? new CliFailure({ message: timedOut(error, timeout), exitCode: ExitCode.timedOut })
            : new CliFailure({ message: error instanceof Error ? error.message : String(error), exitCode: ExitCode.error }),
      }).pipe(Effect.ensuring(end))
      yield* out(summary(done))
      const code = finalExit[done.status] ?? ExitCode.error
      if (code !== ExitCode.ok) return yield* fail(`batch ${done.id} ended ${done.status}`, code)
    }),
  ),
)

const downloadResults = leaf(
  "Download every result line, in submission order, as JSONL",
  Command.make(
    "download-results",
    { batchId, out: Options.text("out").pipe(Options.withDescription("The JSONL file to write; - for standard output")) },
    ({ batchId, out: file }) =>
      Effect.gen(function* () {
        const client = yield* apiClient({ maxRetries: READ_RETRIES })
        const written = yield* sdk(() => client.downloadResultsJsonl(batchId, { out: file === "-" ? process.stdout : file }))
        const where = file === "-" ? "standard output" : file
        yield* note(`Wrote ${written.lines} ${written.lines === 1 ? "result" : "results"} (${written.bytes} bytes) to ${where}`)
      }),
  ),
)

const list = leaf(
  "List your batches, newest first",
  Command.make(
  "list",
  { limit: Options.integer("limit").pipe(Options.withDescription("How many batches, newest first"), Options.withDefault(20)), json },
  ({ limit, json }) =>
    Effect.gen(function* () {
      const client = yield* apiClient({ maxRetries: READ_RETRIES })
      const batches = client.list({ limit: Math.min(Math.max(limit, 1), 100) })
      for (let shown = 0; shown < limit; shown++) {
        const next = yield* sdk(() => batches.next())
        if (next.done === true) break
        yield* out(json ? JSON.stringify(next.value) : `${summary(next.value)}, created ${new Date(next.value.created_at * 1000).toISOString()}`)
      }
    }),
  ),
)

const get = leaf(
  "Print the batch object",
  Command.make("get", { batchId }, ({ batchId }) =>
    Effect.gen(function* () {
      const client = yield* apiClient({ maxRetries: READ_RETRIES })
      yield* out(JSON.stringify(yield* sdk(() => client.getBatch(batchId)), null, 2))
    }),
  ),
)

const cancel = leaf(
  "Cancel the batch: queued rows are cancelled, running rows finish",
  Command.make("cancel", { batchId, json }, ({ batchId, json }) =>
    Effect.gen(function* () {
      const client = yield* apiClient()
      const b = yield* sdk(() => client.cancel(batchId))
      yield* out(json ? JSON.stringify(b) : summary(b))
    }),
  ),
)

const remove = leaf(
  "Delete the batch and its results",
  Command.make("delete", { batchId }, ({ batchId }) =>
    Effect.gen(function* () {
      const client = yield* apiClient()
      const deleted = yield* sdk(() => client.delete(batchId))
      yield* out(`Deleted ${deleted.id}`)
    }),
  ),
)

const commaList = (name: string, description: string) =>
  Options.text(name).pipe(
    Options.withDescription(description),
    Options.optional,
    Options.map(Option.map((text) => text.split(",").map((part) => part.trim()).filter((part) => part !== ""))),
  )

const rerun = leaf(
  "Run again, as a new batch, the rows of a final batch that did not complete; prints the new batch id",
  Command.make(
    "rerun",
    {
      batchId,
      status: commaList("status", "Rows in these statuses, comma-separated (default failed,expired,cancelled; completed too)"),
      errorCode: commaList("error-code", "Only rows whose error has one of these codes, comma-separated, e.g. timeout"),
      metadata: metadataOption,
    },
    ({ batchId, status, errorCode, metadata }) =>
      Effect.gen(function* () {
        const client = yield* apiClient()
        const b = yield* sdk(() =>
          client.rerun(batchId, {
            ...Option.match(status, { onNone: () => ({}), onSome: (s) => ({ statuses: s as RerunOptions["statuses"] & object }) }),
            ...Option.match(errorCode, { onNone: () => ({}), onSome: (c) => ({ errorCodes: c }) }),
            ...(metadata === undefined ? {} : { metadata }),
          }),
        )
        yield* out(b.id)
        yield* note(`Submitted ${b.id}: ${rows(b.request_counts.total)} of ${batchId} again`)
      }),
  ),
)

const commands = [submit, wait, downloadResults, stream, list, get, cancel, remove, rerun]
const batch = group("batch", "Submit, watch and collect batches", commands.map((c) => c.node))

export const batchNode = batch.node
export const batchCommand = batch.own.pipe(
  Command.withSubcommands([
    submit.command,
    wait.command,
    downloadResults.command,
    stream.command,
    list.command,
    get.command,
    cancel.command,
    remove.command,
    rerun.command,
  ]),
)
