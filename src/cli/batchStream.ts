import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { type Batch, type BatchInput, resultLineFromEvent, SluiceApiError, type SluiceClient } from "../sdk/index.js"
import { finalExit, progressReporter, summary } from "./batchProgress.js"
import { apiClient } from "./clients.js"
import { leaf } from "./commandTree.js"
import { CliFailure, ExitCode, fail, sdk } from "./failure.js"
import { metadataOption } from "./metadataOption.js"
import { note, outDrained } from "./output.js"

const rows = (n: number) => `${n} ${n === 1 ? "row" : "rows"}`

/** The --batch-id form: each result line as its row finishes, from the batch's events. */
const follow = (client: SluiceClient, batchId: string) =>
  Effect.gen(function* () {
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
  })

/** The answers a create keyed by its input can get that its user cannot act on without knowing how the key is made. */
const keyedCreateFailure = (error: unknown) => {
  const message = error instanceof Error ? error.message : String(error)
  if (!(error instanceof SluiceApiError)) return new CliFailure({ message, exitCode: ExitCode.error })
  const hint =
    error.code === "batch_deleted" || error.code === "batch_not_found"
      ? "; an earlier run of this input created that batch, and the server answers it for 24 hours: add --metadata (say run=2) to submit the input as a new batch"
      : error.code === "idempotency_key_reused"
        ? "; the key comes from the input's bytes and options: add --metadata (say run=2) to submit it as a new batch"
        : ""
  return new CliFailure({ message: `${message}${hint}`, exitCode: ExitCode.error })
}

/** The --input-file form: the input's batches, created once whatever the runs; each one's results once it is final. */
const run = (client: SluiceClient, input: BatchInput, pollSeconds: number) =>
  Effect.gen(function* () {
    const batches = yield* Effect.tryPromise({
      try: () =>
        client.submitBatchesOnce(input, {
          onSubmitted: (b, resumed) =>
            process.stderr.write(
              resumed
                ? `Resuming ${b.id} (${b.status}), submitted earlier from the same input: ${rows(b.request_counts.total)}\n`
                : `Submitted ${b.id}: ${rows(b.request_counts.total)}\n`,
            ),
        }),
      catch: keyedCreateFailure,
    })
    if (batches.length > 1) yield* note(`The file was split into ${batches.length} batches to stay within the per-batch limits.`)
    let unsuccessful: Batch | undefined
    for (const batch of batches) {
      const { onProgress, end } = progressReporter()
      const done = yield* sdk(() =>
        client.waitForCompletion(batch.id, { timeout: Number.POSITIVE_INFINITY, pollInterval: pollSeconds * 1000, onProgress }),
      ).pipe(Effect.ensuring(end))
      yield* sdk(() => client.downloadResultsJsonl(done.id, { out: process.stdout }))
      yield* note(summary(done))
      if (finalExit[done.status] !== ExitCode.ok) unsuccessful ??= done
    }
    if (unsuccessful !== undefined) {
      return yield* fail(`batch ${unsuccessful.id} ended ${unsuccessful.status}`, finalExit[unsuccessful.status] ?? ExitCode.error)
    }
  })

const usage = (message: string) => fail(`${message} (see sluice batch stream --help)`, ExitCode.usage)

export const stream = leaf(
  "Print a batch's result lines as JSONL on stdout. --batch-id ID: each line as its row finishes, until the batch is done. " +
    "--input-file FILE: submit the file (as submit reads it), wait showing progress on stderr, then print every line; " +
    "run again with the same file and options, it resumes the same batch instead of submitting it twice. " +
    "Exit code 0 completed, 3 failed, 4 expired, 5 cancelled",
  Command.make(
    "stream",
    {
      batchId: Options.text("batch-id").pipe(Options.withDescription("The batch to follow, batch_…"), Options.optional),
      inputFile: Options.file("input-file", { exists: "yes" }).pipe(
        Options.withDescription("JSONL to submit once: the batch's Idempotency-Key comes from the SHA-256 of its bytes and the options below"),
        Options.optional,
      ),
      model: Options.text("model").pipe(
        Options.withDescription("With --input-file: the model for rows that name none (content-only lines need it)"),
        Options.optional,
      ),
      metadata: metadataOption,
      pollInterval: Options.float("poll-interval").pipe(
        Options.withDescription("With --input-file: seconds between polls (default 2)"),
        Options.optional,
      ),
    },
    ({ batchId, inputFile, model, metadata, pollInterval }) =>
      Effect.gen(function* () {
        if (Option.isSome(batchId) && Option.isSome(inputFile)) return yield* usage("batch stream takes --batch-id or --input-file, not both")
        if (Option.isSome(batchId)) {
          const fileOnly = [
            ...(Option.isSome(model) ? ["--model"] : []),
            ...(metadata === undefined ? [] : ["--metadata"]),
            ...(Option.isSome(pollInterval) ? ["--poll-interval"] : []),
          ]
          if (fileOnly.length > 0) return yield* usage(`${fileOnly.join(" and ")} go${fileOnly.length === 1 ? "es" : ""} with --input-file, not --batch-id`)
          return yield* follow(yield* apiClient(), batchId.value)
        }
        if (Option.isNone(inputFile)) return yield* usage("batch stream needs --batch-id ID (follow a batch) or --input-file FILE (submit, wait, print)")
        const seconds = Option.getOrElse(pollInterval, () => 2)
        if (!(seconds > 0)) return yield* usage(`--poll-interval must be more than 0 seconds, got ${seconds}`)
        const input: BatchInput = {
          inputFile: inputFile.value,
          ...Option.match(model, { onNone: () => ({}), onSome: (m: string) => ({ model: m }) }),
          ...(metadata === undefined ? {} : { metadata }),
        }
        return yield* run(yield* apiClient(), input, seconds)
      }),
  ),
)
