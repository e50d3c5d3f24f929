import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { dirname, join } from "node:path"
import { checkpointKey, fileCheckpoints } from "../sdk/index.js"
import { apiClient } from "./clients.js"
import { group, leaf } from "./commandTree.js"
import { credentialsFile, loadCredentials } from "./credentials.js"
import { fail, sdk } from "./failure.js"
import { outDrained } from "./output.js"

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

const responses = group("responses", "Responses and their completion events", [tail.node])
export const responsesNode = responses.node
export const responsesCommand = responses.own.pipe(Command.withSubcommands([tail.command]))
