import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { accountHistory, batchHistory, fileHistory, historyLine, streamHistory } from "../audit/history.js"
import { auditLog, auditTarget, type NoEventLog } from "../audit/auditLog.js"
import { verificationReport, verifyLog } from "../audit/verify.js"
import { isResponseId } from "../domain/batch/subjects.js"
import { batchOfFileId } from "../domain/file/batchFiles.js"
import { isUploadedFileId } from "../domain/file/fileId.js"
import { EventLog, type LogUnavailable } from "../eventlog/EventLog.js"
import { batchAsOf } from "../projections/asOf.js"
import { batchReads, toBatchObject } from "../projections/batchReads.js"
import { resultReads } from "../projections/resultReads.js"
import { group, leaf } from "./commandTree.js"
import { CliFailure, ExitCode, fail } from "./failure.js"
import { out, outDrained } from "./output.js"

/** The audit commands read the event log itself, as the service is configured to (NATS_URL, SLUICE_DATA_DIR). */
const onTheLog = <A>(effect: Effect.Effect<A, CliFailure | LogUnavailable | NoEventLog, EventLog>): Effect.Effect<A, CliFailure> =>
  effect.pipe(
    Effect.provide(auditLog),
    Effect.catchIf(
      (e): e is LogUnavailable | NoEventLog => !(e instanceof CliFailure),
      (e) => fail(e._tag === "NoEventLog" ? e.message : `the event log cannot be read: ${e.message}`),
    ),
  )

const batchId = Options.text("batch-id").pipe(Options.withDescription("The batch's id (batch_…)"))

const history = leaf(
  "Every event of a batch, a response, a stream or an uploaded file (or of an account and its keys), in log order, with its sequence, time and type",
  Command.make(
    "history",
    {
      batchId: batchId.pipe(Options.optional),
      responseId: Options.text("response-id").pipe(Options.withDescription("A response's id (resp_…): the one-row batch it runs as"), Options.optional),
      streamId: Options.text("stream-id").pipe(Options.withDescription("A stream's id (stream_…): its own events, not its items'"), Options.optional),
      fileId: Options.text("file-id").pipe(Options.withDescription("An uploaded file's id (file-…): its parts, numbered, and its events"), Options.optional),
      accountId: Options.text("account-id").pipe(Options.withDescription("An account's id: its events and its keys'"), Options.optional),
      json: Options.boolean("json").pipe(Options.withDescription("One JSON object per line: seq, time, subject, type, event")),
      bodies: Options.boolean("bodies").pipe(Options.withDescription("Include the request and response bodies")),
    },
    ({ batchId, responseId, streamId, fileId, accountId, json, bodies }) =>
      onTheLog(
        Effect.gen(function* () {
          const log = yield* EventLog
          const given = [batchId, responseId, streamId, fileId, accountId].filter(Option.isSome)
          if (given.length !== 1) return yield* fail("give exactly one of --batch-id, --response-id, --stream-id, --file-id and --account-id", ExitCode.usage)
          if (Option.isSome(responseId) && !isResponseId(responseId.value)) {
            return yield* fail(`--response-id takes a response's id (resp_…), not '${responseId.value}'`, ExitCode.usage)
          }
          if (Option.isSome(fileId) && !isUploadedFileId(fileId.value)) {
            const view = batchOfFileId(fileId.value)
            return yield* fail(
              view === undefined
                ? `--file-id takes an uploaded file's id (file-…), not '${fileId.value}'`
                : `'${fileId.value}' is batch ${view.batchId}'s ${view.kind} file, read from its results with no events of its own: see --batch-id ${view.batchId}`,
              ExitCode.usage,
            )
          }
          const entries = Option.isSome(batchId)
            ? yield* batchHistory(log, batchId.value, bodies)
            : Option.isSome(responseId)
              ? yield* batchHistory(log, responseId.value, bodies)
              : Option.isSome(streamId)
                ? yield* streamHistory(log, streamId.value)
                : Option.isSome(fileId)
                  ? yield* fileHistory(log, fileId.value)
                  : yield* accountHistory(log, Option.getOrThrow(accountId))
          if (entries.length === 0) return yield* fail(`no events found for ${given[0]!.value}`)
          for (const e of entries) yield* outDrained(json ? JSON.stringify(e) : historyLine(e))
        }),
      ),
  ),
)

const asOf = leaf(
  "A batch and its results as they were at a moment, replayed from its events",
  Command.make(
    "as-of",
    {
      batchId,
      at: Options.text("at").pipe(Options.withDescription("Unix seconds, or an ISO 8601 time such as 2026-12-01T12:00:00Z")),
    },
    ({ batchId, at }) =>
      onTheLog(
        Effect.gen(function* () {
          const seconds = /^[0-9]{1,12}$/.test(at) ? Number(at) : Math.floor(Date.parse(at) / 1000)
          if (!Number.isFinite(seconds)) return yield* fail(`--at takes Unix seconds or an ISO 8601 time, not '${at}'`, ExitCode.usage)
          const log = yield* EventLog
          const answer = yield* Effect.scoped(
            Effect.map(batchAsOf(log, batchId, seconds), (db) => {
              const row = batchReads(db).one(batchId)
              if (row === undefined) return undefined
              const results = resultReads(db)
              return { batch: toBatchObject(row), results: JSON.parse(results.pageJson(batchId, 0, 1_000_000_000, {})).data }
            }),
          )
          if (answer === undefined) return yield* fail(`no batch ${batchId} as of ${seconds} (${new Date(seconds * 1000).toISOString()})`)
          yield* out(JSON.stringify(answer, null, 2))
        }),
      ),
  ),
)

const verify = leaf(
  "Checks every hash chain of the log and compares a read model rebuilt from it with the live one, batch by batch, response by response, stream by stream, file by file",
  Command.make("verify", {}, () =>
    onTheLog(
      Effect.gen(function* () {
        const { livePath, scratchPath } = yield* Effect.orDie(auditTarget)
        const log = yield* EventLog
        const report = verificationReport(yield* verifyLog(log, livePath, scratchPath))
        for (const line of report.lines) yield* out(line)
        if (!report.ok) return yield* Effect.fail(new CliFailure({ message: "the log or the read model does not verify", exitCode: ExitCode.error }))
      }),
    ),
  ),
)

const audit = group("audit", "Read and verify the event log (where NATS_URL or SLUICE_DATA_DIR point, as for the server)", [
  history.node,
  asOf.node,
  verify.node,
])
export const auditNode = audit.node
export const auditCommand = audit.own.pipe(Command.withSubcommands([history.command, asOf.command, verify.command]))
