import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { choiceOption } from "./choiceOption.js"
import { apiClient, READ_RETRIES } from "./clients.js"
import { group, leaf } from "./commandTree.js"
import { ExitCode, fail, sdk } from "./failure.js"
import { metadataOptionOf } from "./metadataOption.js"
import { priorityField, priorityOption } from "./priorityOption.js"
import { note, out, outDrained } from "./output.js"
import { streamLine, streamStatus } from "./responseOutput.js"

const streamId = Options.text("stream-id").pipe(Options.withDescription("The stream's id, stream_…"))
const json = Options.boolean("json").pipe(Options.withDescription("Print the API's JSON instead of a summary"))

const lines = (n: number) => `${n} ${n === 1 ? "line" : "lines"}`

const create = leaf(
  "Create a stream, open for items; prints its id",
  Command.make(
    "create",
    {
      name: Options.text("name").pipe(Options.withDescription("Its name")),
      window: choiceOption("window", ["15m", "1h", "24h"]).pipe(
        Options.withDescription("15m, 1h or 24h: how long each item may wait to start before it fails as expired"),
        Options.withDefault("24h" as const),
      ),
      priority: priorityOption("high, standard or background: its items' priority unless an item names its own (default standard)"),
      json,
    },
    ({ name, window, priority, json }) =>
      Effect.gen(function* () {
        const client = yield* apiClient()
        const s = yield* sdk(() => client.createStream({ name, window, ...priorityField(priority) }))
        yield* out(json ? JSON.stringify(s) : s.id)
        if (!json) yield* note(`Created ${streamLine(s)}`)
      }),
  ),
)

const list = leaf(
  "List your streams, newest first",
  Command.make("list", { json }, ({ json }) =>
    Effect.gen(function* () {
      const client = yield* apiClient({ maxRetries: READ_RETRIES })
      for (const s of yield* sdk(() => client.listStreams())) yield* outDrained(json ? JSON.stringify(s) : streamLine(s))
    }),
  ),
)

const status = leaf(
  "Print a stream with its item counters and token totals",
  Command.make("status", { streamId, json }, ({ streamId, json }) =>
    Effect.gen(function* () {
      const client = yield* apiClient({ maxRetries: READ_RETRIES })
      const s = yield* sdk(() => client.getStream(streamId))
      yield* out(json ? JSON.stringify(s, null, 2) : streamStatus(s))
    }),
  ),
)

const submit = leaf(
  "Send each line of a JSONL file as a response of the stream, its custom_id the line's; prints each new response's id and custom_id. " +
    "Lines the stream already holds are skipped, so a run started again sends only what is missing",
  Command.make(
    "submit",
    {
      streamId,
      inputFile: Options.file("input-file", { exists: "yes" }).pipe(
        Options.withDescription("JSONL: one response per line, in the forms batch submit reads; chat-shaped bodies are sent as Responses requests"),
      ),
      model: Options.text("model").pipe(
        Options.withDescription("The model for lines that name none (content-only lines need it)"),
        Options.optional,
      ),
      metadata: metadataOptionOf("Each response's"),
      concurrency: Options.integer("concurrency").pipe(Options.withDescription("Lines sent at once"), Options.withDefault(8)),
      json: Options.boolean("json").pipe(Options.withDescription("Print each new response's JSON instead of its id and custom_id")),
    },
    ({ streamId, inputFile, model, metadata, concurrency, json }) =>
      Effect.gen(function* () {
        if (concurrency < 1 || concurrency > 64) return yield* fail(`--concurrency must be from 1 to 64, got ${concurrency}`, ExitCode.usage)
        const client = yield* apiClient()
        const input = {
          inputFile,
          ...Option.match(model, { onNone: () => ({}), onSome: (m: string) => ({ model: m }) }),
          ...(metadata === undefined ? {} : { metadata }),
        }
        const done = yield* sdk(() =>
          client.submitToStream(streamId, input, {
            concurrency,
            onPlanned: ({ lines: all, skipped }) =>
              process.stderr.write(
                skipped === 0
                  ? `Sending ${lines(all)} to ${streamId}\n`
                  : `${streamId} holds ${skipped} of the ${lines(all)} already: sending ${all - skipped}\n`,
              ),
            onSent: (response, customId) => process.stdout.write(`${json ? JSON.stringify(response) : `${response.id} ${customId}`}\n`),
          }),
        )
        yield* note(`Sent ${lines(done.sent)} to ${streamId}${done.skipped === 0 ? "" : `; ${done.skipped} were there already`}`)
      }),
  ),
)

const cancel = leaf(
  "Cancel the stream: it takes no new items, those not yet started are cancelled, running ones finish",
  Command.make("cancel", { streamId, json }, ({ streamId, json }) =>
    Effect.gen(function* () {
      const client = yield* apiClient()
      const s = yield* sdk(() => client.cancelStream(streamId))
      yield* out(json ? JSON.stringify(s) : streamStatus(s))
    }),
  ),
)

const archive = leaf(
  "Archive the stream: closed for good, its items not yet started cancelled",
  Command.make("archive", { streamId, json }, ({ streamId, json }) =>
    Effect.gen(function* () {
      const client = yield* apiClient()
      const s = yield* sdk(() => client.archiveStream(streamId))
      yield* out(json ? JSON.stringify(s) : streamStatus(s))
    }),
  ),
)

const commands = [create, list, status, submit, cancel, archive]
const stream = group("stream", "Streams: open-ended queues of responses that arrive over time", commands.map((c) => c.node))

export const streamNode = stream.node
export const streamCommand = stream.own.pipe(
  Command.withSubcommands([create.command, list.command, status.command, submit.command, cancel.command, archive.command]),
)
