import { existsSync, renameSync } from "node:fs"
import { join } from "node:path"
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Console, Data, Effect, Exit, Layer, Option } from "effect"
import { eventLogLayer, logBackend, readModelPath } from "./app.js"
import { SluiceConfig } from "./config/Config.js"
import { EventLog, type LogUnavailable } from "./eventlog/EventLog.js"
import { appliedOffset } from "./projections/Projector.js"
import { openReadOnly, readModelInUse } from "./projections/readModelFile.js"
import {
  contentTables,
  differingTables,
  type ReadModelDigest,
  readModelDigest,
  rebuildReadModel,
  removeReadModelFiles,
} from "./projections/rebuild.js"

const usage = `Usage: npm run replay [-- --apply]

Rebuilds every projection from the whole event log into a temporary read model
next to the live one, and compares their tables (${contentTables.join(", ")}).

  --apply     Replace the live read model by the rebuilt one. The service must be
              stopped: replay refuses while a process holds the live read model open.
  -h, --help  Show this text.

Environment, as for the service:
  SLUICE_DATA_DIR  data directory (default ./data)
  NATS_URL         replay the JetStream log at this URL instead of the embedded one

Exit status: 0 equal (or applied), 1 different or not comparable (no live read
model, or it is behind or ahead of the log), 2 error.`

class ReplayFailed extends Data.TaggedError("ReplayFailed")<{ readonly message: string }> {}

const EQUAL = 0
const DIFFERENT = 1
const ERROR = 2

interface Live {
  readonly offset: number
  readonly digest: ReadModelDigest
}

const readLive = (path: string): Option.Option<Live> => {
  if (!existsSync(path)) return Option.none()
  const db = openReadOnly(path)
  try {
    return Option.some(db.transaction(() => ({ offset: appliedOffset(db), digest: readModelDigest(db) }))())
  } finally {
    db.close()
  }
}

const readDigest = (path: string): ReadModelDigest => {
  const db = openReadOnly(path)
  try {
    return readModelDigest(db)
  } finally {
    db.close()
  }
}

const short = (digest: ReadModelDigest) => digest.sha256.slice(0, 16)

const refuseWhileRunning = (livePath: string) =>
  Effect.suspend(() =>
    readModelInUse(livePath)
      ? new ReplayFailed({
          message: `refusing to --apply: a process holds ${livePath} open; stop the service first`,
        })
      : Effect.void,
  )

/** Answers whether the live read model equals the replay, or says why it cannot be compared. */
const compare = (live: Option.Option<Live>, livePath: string, rebuilt: ReadModelDigest, appliedSeq: number, lastSeq: number) =>
  Option.match(live, {
    onNone: () => Console.log(`live      none at ${livePath}`).pipe(Effect.as(DIFFERENT)),
    onSome: ({ offset, digest }) =>
      Effect.gen(function* () {
        yield* Console.log(`live      ${livePath}, applied up to seq ${offset}`)
        if (offset > lastSeq) {
          yield* Console.log(`result    not compared: the live read model is ahead of the log, which ends at seq ${lastSeq}`)
          return DIFFERENT
        }
        if (offset < appliedSeq) {
          yield* Console.log(`result    not compared: the live read model is behind the log, which has events up to seq ${appliedSeq}`)
          return DIFFERENT
        }
        const differing = differingTables(digest, rebuilt)
        if (differing.length === 0) {
          yield* Console.log(`result    equal (sha256 ${short(rebuilt)})`)
          return EQUAL
        }
        const counts = differing.map((t) => `${t}: live ${digest.tables[t].rows} rows, rebuilt ${rebuilt.tables[t].rows}`)
        yield* Console.log(`result    different in ${counts.join("; ")} (sha256 live ${short(digest)}, rebuilt ${short(rebuilt)})`)
        return DIFFERENT
      }),
  })

const replay = (apply: boolean) =>
  Effect.gen(function* () {
    const config = yield* SluiceConfig
    const livePath = readModelPath(config)
    const rebuiltPath = join(config.dataDir, `read.${logBackend(config)}.rebuild.sqlite`)
    if (apply) yield* refuseWhileRunning(livePath)
    const log = yield* EventLog
    const rebuilt = yield* rebuildReadModel(log, rebuiltPath).pipe(
      Effect.tapErrorCause(() => Effect.sync(() => removeReadModelFiles(rebuiltPath))),
    )
    const perSecond = rebuilt.ms > 0 ? Math.round((rebuilt.events * 1000) / rebuilt.ms) : rebuilt.events
    yield* Console.log(`events    ${rebuilt.events} replayed up to log seq ${rebuilt.lastSeq} (${rebuilt.skipped} skipped)`)
    yield* Console.log(`time      ${rebuilt.ms.toFixed(0)} ms, ${perSecond} events/s`)
    const digest = readDigest(rebuiltPath)
    const verdict = yield* compare(readLive(livePath), livePath, digest, rebuilt.appliedSeq, rebuilt.lastSeq)
    if (!apply) {
      removeReadModelFiles(rebuiltPath)
      return verdict
    }
    yield* refuseWhileRunning(livePath)
    removeReadModelFiles(livePath)
    renameSync(rebuiltPath, livePath)
    yield* Console.log(`applied   ${livePath} is now the rebuilt read model`)
    return EQUAL
  })

// Opening the embedded log would create an empty one: a wrong SLUICE_DATA_DIR would then look like an empty history.
const eventLog = Layer.unwrapEffect(
  Effect.map(SluiceConfig, (config): Layer.Layer<EventLog, LogUnavailable | ReplayFailed> => {
    const embedded = join(config.dataDir, "log.sqlite")
    return Option.isNone(config.natsUrl) && !existsSync(embedded)
      ? Layer.fail(new ReplayFailed({ message: `no event log at ${embedded}: is SLUICE_DATA_DIR right?` }))
      : eventLogLayer(config)
  }),
)

const program = Effect.suspend(() => {
  const args = process.argv.slice(2)
  if (args.includes("--help") || args.includes("-h")) return Console.log(usage).pipe(Effect.as(EQUAL))
  const unknown = args.filter((a) => a !== "--apply")
  if (unknown.length > 0) return Console.error(`unknown argument ${unknown[0]}\n\n${usage}`).pipe(Effect.as(ERROR))
  return replay(args.includes("--apply")).pipe(
    Effect.provide(eventLog),
    Effect.catchAll((e) => Console.error(`replay failed: ${e.message}`).pipe(Effect.as(ERROR))),
  )
})

NodeRuntime.runMain(program, {
  teardown: (exit, onExit) =>
    onExit(Exit.isSuccess(exit) ? Number(exit.value) : Cause.isInterruptedOnly(exit.cause) ? 130 : ERROR),
})
