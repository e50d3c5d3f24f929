import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { BatchEndpoints } from "../domain/batch/endpoint.js"
import { type Batch, type BatchEstimate, type RerunOptions, WaitTimeoutError } from "../sdk/index.js"
import { finalExit, progressReporter, summary } from "./batchProgress.js"
import { stream } from "./batchStream.js"
import { apiClient, READ_RETRIES } from "./clients.js"
import { group, leaf } from "./commandTree.js"
import { choiceOption } from "./choiceOption.js"
import { CliFailure, ExitCode, fail, sdk } from "./failure.js"
import { checkHasFiles, createFromUpload, endpointOf, saveBatchFile, withUpload } from "./fileBatch.js"
import { metadataOption } from "./metadataOption.js"
import { priorityField, priorityOption, shownPriority } from "./priorityOption.js"
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

const printEstimate = (e: BatchEstimate) =>
  Effect.gen(function* () {
    yield* out(JSON.stringify(e))
    const eta = e.estimated_completion_at === null ? "no rate measured yet" : new Date(e.estimated_completion_at * 1000).toISOString()
    yield* note(
      `Would submit ${rows(e.request_counts.total)}: $${e.cost_usd_min}–$${e.cost_usd_max} (${e.tokens} tokens), done by ${eta}` +
        `${e.fits.unfinished_batches ? "" : "; refused now: too many unfinished batches"}${e.fits.daily_quota ? "" : "; may exceed today's quota"}` +
        `${e.fits.priority ? "" : "; refused: the priority is above the account's max_priority"}`,
    )
  })

const noteWindow = (window: Option.Option<string>, first: Batch | undefined) =>
  Option.isSome(window) && first !== undefined && window.value !== first.completion_window
    ? note(`--window ${window.value} is ignored, as the API ignores a sent completion_window: the server gave ${first.completion_window}`)
    : Effect.void

const submit = leaf(
  "Submit a JSONL file as one batch, or several when it exceeds the per-batch limits; prints each batch id. " +
    "With --as-file: upload the file as it is (OpenAI's file-based flow) and create one batch from it",
  Command.make(
    "submit",
    {
      inputFile: Options.file("input-file", { exists: "yes" }).pipe(
        Options.withDescription("JSONL: one row per line, as an OpenAI envelope, {custom_id?, body} or {content}; with --as-file, OpenAI envelopes only"),
      ),
      model: Options.text("model").pipe(
        Options.withDescription("The model for rows that name none (content-only lines need it); not with --as-file"),
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
      asFile: Options.boolean("as-file").pipe(
        Options.withDescription("Upload the file (POST /v1/files) and create the batch from its id, as OpenAI's batch API does, instead of sending the rows inline"),
      ),
      endpoint: choiceOption("endpoint", BatchEndpoints).pipe(
        Options.withDescription("With --as-file: the endpoint every row calls (default: the first line's url, else /v1/chat/completions)"),
        Options.optional,
      ),
      priority: priorityOption("high, standard or background: the batches' priority on their models (default standard; more than the account's max_priority is refused)"),
    },
    ({ inputFile, model, metadata, window, dryRun, asFile, endpoint, priority }) =>
      Effect.gen(function* () {
        if (asFile) {
          if (Option.isSome(model)) {
            return yield* fail("--model goes with inline rows, not --as-file: an uploaded file is sent as it is, each line naming its model", ExitCode.usage)
          }
          const client = yield* apiClient()
          const request = {
            endpoint: Option.isSome(endpoint) ? endpoint.value : yield* Effect.promise(() => endpointOf(inputFile)),
            ...(metadata === undefined ? {} : { metadata }),
            ...priorityField(priority),
          }
          if (dryRun) {
            const estimate = yield* withUpload(client, inputFile, (input_file_id) => client.estimate({ ...request, input_file_id }), { keep: false })
            return yield* printEstimate(estimate)
          }
          const b = yield* createFromUpload(client, inputFile, request)
          yield* out(b.id)
          yield* note(`Submitted ${b.id}: ${rows(b.request_counts.total)} from ${b.input_file_id}, each calling ${b.endpoint}${shownPriority(b.priority)}`)
          return yield* noteWindow(window, b)
        }
        if (Option.isSome(endpoint)) {
          return yield* fail("--endpoint goes with --as-file: inline rows name their endpoint in each line's url", ExitCode.usage)
        }
        const client = yield* apiClient()
        const input = {
          inputFile,
          ...Option.match(model, { onNone: () => ({}), onSome: (m: string) => ({ model: m }) }),
          ...(metadata === undefined ? {} : { metadata }),
          ...priorityField(priority),
        }
        if (dryRun) {
          const estimates = yield* sdk(() => client.estimateBatches(input))
          for (const e of estimates) yield* printEstimate(e)
          return
        }
        const batches = yield* sdk(() => client.submitBatches(input))
        for (const b of batches) {
          yield* out(b.id)
          yield* note(`Submitted ${b.id}: ${rows(b.request_counts.total)}${shownPriority(b.priority)}`)
        }
        if (batches.length > 1) yield* note(`The file was split into ${batches.length} batches to stay within the per-batch limits.`)
        yield* noteWindow(window, batches[0])
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
      if (done.output_file_id !== null || done.error_file_id !== null) {
        const files = [done.output_file_id === null ? "" : ` --output-file output.jsonl`, done.error_file_id === null ? "" : ` --error-file errors.jsonl`].join("")
        yield* note(
          `Output file ${done.output_file_id ?? "none"}, error file ${done.error_file_id ?? "none"}: sluice batch download-results --batch-id ${done.id}${files}`,
        )
      }
      const code = finalExit[done.status] ?? ExitCode.error
      if (code !== ExitCode.ok) return yield* fail(`batch ${done.id} ended ${done.status}`, code)
    }),
  ),
)

const fileOption = (name: string, description: string) => Options.text(name).pipe(Options.withDescription(description), Options.optional)

const downloadResults = leaf(
  "Download every result line, in submission order, as JSONL (--out); for a batch created from a file, its output and error files " +
    "in OpenAI's format (--output-file, --error-file)",
  Command.make(
    "download-results",
    {
      batchId,
      out: fileOption("out", "The results JSONL file to write; - for standard output"),
      outputFile: fileOption("output-file", "Where to write the output file (the completed rows' lines); - for standard output"),
      errorFile: fileOption("error-file", "Where to write the error file (the failed, expired and cancelled rows' lines); - for standard output"),
    },
    ({ batchId, out: results, outputFile, errorFile }) =>
      Effect.gen(function* () {
        const targets = [results, outputFile, errorFile].flatMap((o) => (Option.isSome(o) ? [o.value] : []))
        if (targets.length === 0) {
          return yield* fail("download-results needs --out FILE, --output-file FILE or --error-file FILE (see sluice batch download-results --help)", ExitCode.usage)
        }
        if (targets.filter((t) => t === "-").length > 1) return yield* fail("only one of --out, --output-file and --error-file may be - (standard output)", ExitCode.usage)
        const client = yield* apiClient({ maxRetries: READ_RETRIES })
        if (Option.isSome(outputFile) || Option.isSome(errorFile)) {
          const batch = yield* sdk(() => client.getBatch(batchId))
          yield* checkHasFiles(batch)
          if (Option.isSome(outputFile)) yield* saveBatchFile(client, batch, "output", outputFile.value)
          if (Option.isSome(errorFile)) yield* saveBatchFile(client, batch, "error", errorFile.value)
        }
        if (Option.isNone(results)) return
        const file = results.value
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
