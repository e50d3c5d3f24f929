import { join } from "node:path"
import { jetstream } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import Database from "better-sqlite3"
import { Context, Effect, Layer } from "effect"
import { EventLog, type LogUnavailable } from "../../src/eventlog/EventLog.js"
import * as JetStreamEventLog from "../../src/eventlog/JetStreamEventLog.js"
import * as SqliteEventLog from "../../src/eventlog/SqliteEventLog.js"
import { rebuildReadModel, removeReadModelFiles } from "../../src/projections/rebuild.js"
import type { Context as BenchContext } from "../context.js"
import { type Backend, atLeast, figure } from "../figures.js"
import { repoRoot, startNats, tempDir } from "../processes.js"
import type { Scenario } from "../scenario.js"
import { ratios } from "../stats.js"
import { fillLog } from "../syntheticLog.js"
import { runToEnd } from "../../test/support/processRun.js"

interface Timed {
  readonly events: number
  readonly ms: number
}

const perSecond = (t: Timed) => t.events / (t.ms / 1000)

/** Every stored message of the embedded log in seq order, straight from better-sqlite3, not decoded. */
const rawSqliteRead = (path: string) => async (): Promise<Timed> => {
  const t0 = performance.now()
  const db = new Database(path, { readonly: true })
  let events = 0
  try {
    for (const _ of db.prepare("SELECT seq, subject, headers, data, time FROM messages ORDER BY seq").raw().iterate()) events++
  } finally {
    db.close()
  }
  return { events, ms: performance.now() - t0 }
}

/** Every message of the stream through a plain JetStream ordered consumer with its default settings, not decoded. */
const rawJetStreamRead = (url: string) => async (): Promise<Timed> => {
  const t0 = performance.now()
  const nc = await connect({ servers: url })
  let events = 0
  try {
    const consumer = await jetstream(nc).consumers.get("SLUICE")
    const messages = await consumer.consume()
    for await (const m of messages) {
      events++
      if (m.info.pending === 0) break
    }
    await messages.close()
  } finally {
    await nc.close()
  }
  return { events, ms: performance.now() - t0 }
}

const withLog = <A, E>(layer: Layer.Layer<EventLog, LogUnavailable>, use: (log: EventLog["Type"]) => Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.scoped(Effect.flatMap(Layer.build(layer), (context) => use(Context.get(context, EventLog)))))

interface Logs {
  readonly scratch: string
  readonly sqlitePath: string
  readonly natsUrl: string
  readonly written: ReadonlyArray<string>
  readonly stop: () => Promise<void>
}

const sqliteLayer = (path: string) => SqliteEventLog.layer({ path })
const natsLayer = (url: string) => JetStreamEventLog.layer({ url })

/** Writes both logs: a 1M-event embedded one and a smaller JetStream one (its own nats-server). */
const writeLogs = async (ctx: BenchContext): Promise<Logs> => {
  const { b6Batches, b6NatsBatches, b6RowsPerBatch, slots } = ctx.sizes
  const scratch = tempDir("sluice-bench-b6-")
  const nats = await startNats()
  const sqlitePath = join(scratch.path, "log.sqlite")
  const write = async (backend: Backend, layer: Layer.Layer<EventLog, LogUnavailable>, batches: number) => {
    const t0 = performance.now()
    const appended = await withLog(layer, (log) => fillLog(log, batches, b6RowsPerBatch, slots))
    const line = `${backend}: ${appended.toLocaleString("en")} events written in ${((performance.now() - t0) / 1000).toFixed(1)} s`
    ctx.progress(`B6: ${line}`)
    return line
  }
  const written = [await write("embedded", sqliteLayer(sqlitePath), b6Batches), await write("nats", natsLayer(nats.url), b6NatsBatches)]
  return {
    scratch: scratch.path,
    sqlitePath,
    natsUrl: nats.url,
    written,
    stop: async () => {
      await nats.stop()
      await scratch.remove()
    },
  }
}

const VERIFIED = /^messages\s+(\d+) checked, and \d+ replayed, in (\d+) ms/m

/**
 * `sluice audit verify` as a user runs it (the CLI bundle), on the log and a live read model rebuilt
 * from it beside it: every chain checked, a scratch read model rebuilt and compared, table by table.
 */
const auditVerify = (backend: Backend, dataDir: string, natsUrl: string) => async (): Promise<Timed> => {
  const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", SLUICE_DATA_DIR: dataDir, ...(backend === "nats" ? { NATS_URL: natsUrl } : {}) }
  const run = await runToEnd(process.execPath, [join(repoRoot, "bin/sluice.mjs"), "audit", "verify"], { env, cwd: repoRoot })
  const found = VERIFIED.exec(run.stdout)
  if (run.code !== 0 || found === null) throw new Error(`B6 ${backend}: sluice audit verify exited ${run.code}:\n${run.stdout}${run.stderr}`)
  return { events: Number(found[1]), ms: Number(found[2]) }
}

/** Trials of a raw ordered read next to a full rebuild of the read model, then of `sluice audit verify`, on the same log. */
const measure = async (
  ctx: BenchContext,
  backend: Backend,
  layer: Layer.Layer<EventLog, LogUnavailable>,
  rawRead: () => Promise<Timed>,
  scratch: string,
  verify: () => Promise<Timed>,
) => {
  const raw: Array<number> = []
  const rebuilt: Array<number> = []
  let events = 0
  for (let t = 0; t < ctx.sizes.trials; t++) {
    const r = await rawRead()
    const path = join(scratch, `read.${backend}.rebuild.sqlite`)
    const b = await withLog(layer, (log) => rebuildReadModel(log, path))
    removeReadModelFiles(path)
    if (r.events !== b.events) throw new Error(`B6 ${backend}: the raw read saw ${r.events} events, the rebuild ${b.events}`)
    events = b.events
    raw.push(perSecond(r))
    rebuilt.push(perSecond(b))
    ctx.progress(`B6 ${backend} trial ${t + 1}: rebuild ${rebuilt[t]!.toFixed(0)} events/s, raw read ${raw[t]!.toFixed(0)}/s`)
  }
  // The live read model verify compares with: one more rebuild, where the service would keep it.
  await withLog(layer, (log) => rebuildReadModel(log, join(scratch, `read.${backend}.sqlite`)))
  const verified: Array<number> = []
  for (let t = 0; t < ctx.sizes.trials; t++) {
    const v = await verify()
    if (v.events !== events) throw new Error(`B6 ${backend}: sluice audit verify checked ${v.events} messages, the rebuild read ${events}`)
    verified.push(perSecond(v))
    ctx.progress(`B6 ${backend} trial ${t + 1}: sluice audit verify ${verified[t]!.toFixed(0)} events/s`)
  }
  removeReadModelFiles(join(scratch, `read.${backend}.sqlite`))
  const scenario = `rebuild every projection from ${events.toLocaleString("en")} events`
  return [
    figure({ id: "B6", scenario, backend, figure: "rebuild events/s", samples: rebuilt, target: atLeast(50_000) }),
    figure({ id: "B6", scenario, backend, figure: "raw ordered read events/s", samples: raw }),
    figure({ id: "B6", scenario, backend, figure: "rebuild ÷ raw ordered read", samples: ratios(rebuilt, raw), digits: 3, target: atLeast(0.5) }),
    figure({ id: "B6", scenario: `sluice audit verify on the same ${events.toLocaleString("en")} events`, backend, figure: "verify events/s", samples: verified }),
  ]
}

export const b6Rebuild: Scenario = {
  id: "B6",
  title: "rebuild the projections from a large log",
  uses: [],
  run: async (ctx) => {
    const logs = await writeLogs(ctx)
    try {
      const embedded = await measure(ctx, "embedded", sqliteLayer(logs.sqlitePath), rawSqliteRead(logs.sqlitePath), logs.scratch, auditVerify("embedded", logs.scratch, logs.natsUrl))
      const onNats = await measure(ctx, "nats", natsLayer(logs.natsUrl), rawJetStreamRead(logs.natsUrl), logs.scratch, auditVerify("nats", logs.scratch, logs.natsUrl))
      const { b6Batches, b6NatsBatches, b6RowsPerBatch } = ctx.sizes
      return {
        figures: [...embedded, ...onNats],
        notes: [
          `B6: each log is written directly with the project's EventLog adapter, as BatchWriter publishes: an account and its key, then completed batches of ${b6RowsPerBatch.toLocaleString("en")} small rows (row_bodies and rows_added chunks, batch_created, batch_started, row_started + row_completed per row, batch_completed), ${b6Batches} on the embedded log and ${b6NatsBatches} on NATS (fewer events there: writing 1M through JetStream and rebuilding from them three times takes about 5 minutes, half the run's budget); rebuildReadModel (what \`npm run replay\` times) runs in the benchmark's process; \`sluice audit verify\` runs as the CLI (its bundle) with the log's SLUICE_DATA_DIR (and NATS_URL) and a live read model rebuilt beside it, and its events/s are the messages it checked over its whole run (every chain, then a scratch rebuild and the comparison, batch by batch), as it prints them; the raw read is better-sqlite3 over the messages table, or a JetStream ordered consumer with default settings (${logs.written.join("; ")}).`,
        ],
      }
    } finally {
      await logs.stop()
    }
  },
}
