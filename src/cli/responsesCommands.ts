import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { checkpointKey, fileCheckpoints, type ResponseCreateRequest } from "../sdk/index.js"
import { choiceOption } from "./choiceOption.js"
import { apiClient, READ_RETRIES } from "./clients.js"
import { group, leaf } from "./commandTree.js"
import { credentialsFile, loadCredentials } from "./credentials.js"
import { ExitCode, fail, sdk } from "./failure.js"
import { metadataOptionOf } from "./metadataOption.js"
import { priorityField, priorityOption } from "./priorityOption.js"
import { note, out, outDrained } from "./output.js"
import { functionCalls, outputText, responseSummary } from "./responseOutput.js"

/** `SLUICE_CHECKPOINTS` names the file outright; otherwise `checkpoints.json` beside the stored credentials. */
export const checkpointsFile = (env: NodeJS.ProcessEnv = process.env): string =>
  env["SLUICE_CHECKPOINTS"] || join(dirname(credentialsFile(env)), "checkpoints.json")

const tail = leaf(
  "Print completion events as JSONL as they happen, from where the named consumer's checkpoint left off (else the newest page)",
  Command.make(
    "tail",
    {
      streamId: Options.text("stream-id").pipe(
        Options.withDescription("Only this stream's events; without it, the completions outside streams (batch rows)"),
        Options.optional,
      ),
      consumer: Options.text("consumer").pipe(Options.withDescription("The checkpoint's name"), Options.withDefault("default")),
      fromLatest: Options.boolean("from-latest").pipe(Options.withDescription("Forget the checkpoint and start with the newest page of events")),
      noCheckpoint: Options.boolean("no-checkpoint").pipe(Options.withDescription("Neither read nor save a checkpoint")),
      limit: Options.integer("limit").pipe(
        Options.withDescription("Exit after printing this many events (default: follow until interrupted)"),
        Options.optional,
      ),
    },
    ({ streamId, consumer, fromLatest, noCheckpoint, limit }) =>
      Effect.gen(function* () {
        const most = Option.getOrUndefined(limit)
        if (most !== undefined && most < 1) return yield* fail(`--limit must be 1 or more, got ${most}`)
        const client = yield* apiClient()
        const stream = Option.getOrUndefined(streamId)
        const store = noCheckpoint ? undefined : fileCheckpoints(checkpointsFile())
        const key = checkpointKey(loadCredentials().baseUrl, stream, consumer)
        if (fromLatest) store?.clear(key)
        const after = fromLatest ? undefined : store?.load(key)
        // The CLI keeps the checkpoint itself: saved once each event is printed, the last one included.
        const events = client.iterResponsesEvents({
          follow: true,
          checkpoint: false,
          pageSize: Math.min(most ?? 100, 100),
          ...(stream === undefined ? {} : { streamId: stream }),
          ...(after === undefined ? {} : { startingAfter: after }),
        })
        for (let printed = 0; most === undefined || printed < most; printed++) {
          const next = yield* sdk(() => events.next())
          if (next.done === true) return
          yield* outDrained(JSON.stringify(next.value))
          yield* Effect.sync(() => store?.save(key, next.value.completion_id))
        }
      }),
  ),
)

const responseId = Options.text("response-id").pipe(Options.withDescription("The response's id, resp_…"))
const json = Options.boolean("json").pipe(Options.withDescription("Print the API's JSON instead of a summary"))
const optionalText = (name: string, description: string) => Options.text(name).pipe(Options.withDescription(description), Options.optional)

const usage = (message: string) => fail(`${message} (see sluice responses create --help)`, ExitCode.usage)

/** The input: the file's text, or its input items when it holds a JSON array. */
const inputOf = (file: string) =>
  Effect.try({
    try: () => readFileSync(file, "utf8"),
    catch: (error) => `cannot read --input-file ${file}: ${error instanceof Error ? error.message : String(error)}`,
  }).pipe(
    Effect.map((text): ResponseCreateRequest["input"] => {
      if (!text.trimStart().startsWith("[")) return text
      try {
        return JSON.parse(text) as ResponseCreateRequest["input"]
      } catch {
        return text
      }
    }),
    Effect.catchAll((message) => fail(message)),
  )

const create = leaf(
  "Create a response: without --background or --stream-id it waits for the model and prints the text it answered; " +
    "queued, it prints the response's id. Exit code 3 when the response failed",
  Command.make(
    "create",
    {
      model: Options.text("model").pipe(Options.withDescription("The model")),
      input: optionalText("input", "The input text"),
      inputFile: Options.file("input-file", { exists: "yes" }).pipe(
        Options.withDescription("A file holding the input: its text, or a JSON array of Responses input items"),
        Options.optional,
      ),
      instructions: optionalText("instructions", "The system instructions"),
      background: Options.boolean("background").pipe(Options.withDescription("Answer at once and run the response on a batch slot")),
      streamId: optionalText("stream-id", "Make it an item of this open stream (queued, whatever --background says)"),
      customId: optionalText("custom-id", "Its custom_id, carried to its completion event"),
      metadata: metadataOptionOf("The response's"),
      serviceTier: choiceOption("service-tier", ["auto", "default", "flex", "scale", "priority"]).pipe(
        Options.withDescription("auto, default, flex, scale or priority: flex waits for a batch slot (a blocking response only); the others are served at once"),
        Options.optional,
      ),
      priority: priorityOption(
        "high, standard or background: a queued response's priority (--background: default standard; --stream-id: default the stream's)",
      ),
      json,
    },
    ({ model, input, inputFile, instructions, background, streamId, customId, metadata, serviceTier, priority, json }) =>
      Effect.gen(function* () {
        if (Option.isSome(input) === Option.isSome(inputFile)) return yield* usage("responses create takes --input TEXT or --input-file FILE, one of them")
        const given = Option.isSome(input) ? input.value : yield* inputOf(Option.getOrThrow(inputFile))
        const tags = {
          ...metadata,
          ...Option.match(streamId, { onNone: () => ({}), onSome: (id) => ({ stream_id: id }) }),
          ...Option.match(customId, { onNone: () => ({}), onSome: (id) => ({ custom_id: id }) }),
        }
        const request: ResponseCreateRequest = {
          model,
          input: given,
          ...Option.match(instructions, { onNone: () => ({}), onSome: (text) => ({ instructions: text }) }),
          ...(background ? { background: true } : {}),
          ...Option.match(serviceTier, { onNone: () => ({}), onSome: (tier) => ({ service_tier: tier }) }),
          ...priorityField(priority),
          ...(Object.keys(tags).length === 0 ? {} : { metadata: tags }),
        }
        const client = yield* apiClient()
        const r = yield* sdk(() => client.createResponse(request))
        if (json) yield* out(JSON.stringify(r))
        if (r.status === "in_progress") {
          if (!json) yield* out(r.id)
          return yield* note(`${responseSummary(r)}: queued for a batch slot; sluice responses get --response-id ${r.id} reads it`)
        }
        if (!json) {
          const text = outputText(r)
          if (text !== "") yield* out(text)
        }
        const calls = functionCalls(r)
        yield* note(`${responseSummary(r)}${calls === 0 ? "" : `; ${calls} function ${calls === 1 ? "call" : "calls"} (see --json)`}`)
        if (r.status === "failed") return yield* fail(`response ${r.id} failed`, ExitCode.failed)
      }),
  ),
)

const get = leaf(
  "Print a queued response (a background one, a stream's item) as JSON",
  Command.make("get", { responseId }, ({ responseId }) =>
    Effect.gen(function* () {
      const client = yield* apiClient({ maxRetries: READ_RETRIES })
      yield* out(JSON.stringify(yield* sdk(() => client.getResponse(responseId)), null, 2))
    }),
  ),
)

const cancel = leaf(
  "Cancel a queued response: one waiting to start is cancelled, one running finishes its call; a final one is left as it is",
  Command.make("cancel", { responseId, json }, ({ responseId, json }) =>
    Effect.gen(function* () {
      const client = yield* apiClient()
      const r = yield* sdk(() => client.cancelResponse(responseId))
      yield* out(json ? JSON.stringify(r) : responseSummary(r))
    }),
  ),
)

const list = leaf(
  "List your queued responses (background ones and streams' items), newest first",
  Command.make(
    "list",
    {
      streamId: optionalText("stream-id", "Only this stream's items"),
      limit: Options.integer("limit").pipe(Options.withDescription("How many responses, newest first"), Options.withDefault(20)),
      json,
    },
    ({ streamId, limit, json }) =>
      Effect.gen(function* () {
        if (limit < 1) return yield* fail(`--limit must be 1 or more, got ${limit}`, ExitCode.usage)
        const client = yield* apiClient({ maxRetries: READ_RETRIES })
        const responses = client.listResponses({
          limit: Math.min(limit, 100),
          ...Option.match(streamId, { onNone: () => ({}), onSome: (id) => ({ streamId: id }) }),
        })
        for (let shown = 0; shown < limit; shown++) {
          const next = yield* sdk(() => responses.next())
          if (next.done === true) break
          yield* outDrained(json ? JSON.stringify(next.value) : responseSummary(next.value))
        }
      }),
  ),
)

const commands = [create, get, cancel, list, tail]
const responses = group("responses", "Create, read and cancel responses; follow their completion events", commands.map((c) => c.node))
export const responsesNode = responses.node
export const responsesCommand = responses.own.pipe(
  Command.withSubcommands([create.command, get.command, cancel.command, list.command, tail.command]),
)
