import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import Database from "better-sqlite3"
import { Chunk, Context, Effect, Layer, Stream } from "effect"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EventLog, type EventLogShape, type LogUnavailable } from "../src/eventlog/EventLog.js"
import * as JetStreamEventLog from "../src/eventlog/JetStreamEventLog.js"
import * as SqliteEventLog from "../src/eventlog/SqliteEventLog.js"
import { appliedOffset, makeApplier } from "../src/projections/Projector.js"
import { ReadModel } from "../src/projections/ReadModel.js"
import { openReadOnly } from "../src/projections/readModelFile.js"
import { contentTables, type ReadModelDigest, readModelDigest, rebuildReadModel, removeReadModelFiles } from "../src/projections/rebuild.js"
import { simDirective } from "../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { chatRow, client } from "./support/client.js"
import { type NatsServer, startNatsServer } from "./support/natsServer.js"
import { type ProcessRun, runToEnd } from "./support/processRun.js"
import { type Sluice, startSluice } from "./support/sluice.js"

/** `npm run replay` as an operator runs it: its own process, configured by the service's environment. */
const runReplay = (dataDir: string, natsUrl: string | undefined, ...args: Array<string>): Promise<ProcessRun> => {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), SLUICE_DATA_DIR: dataDir }
  delete env.NATS_URL
  if (natsUrl !== undefined) env.NATS_URL = natsUrl
  return runToEnd(process.execPath, ["bin/replay.mjs", ...args], { env })
}

const fileDigest = (path: string): ReadModelDigest => {
  const db = openReadOnly(path)
  try {
    return readModelDigest(db)
  } finally {
    db.close()
  }
}

const withLog = <A, E>(
  layer: Layer.Layer<EventLog, LogUnavailable>,
  use: (log: EventLogShape) => Effect.Effect<A, E>,
): Promise<A> => Effect.runPromise(Effect.flatMap(EventLog, use).pipe(Effect.provide(layer)))

/** What the live Projector does across a restart: apply up to `cut`, then resume from the recorded offset. */
const replayInTwo = (log: EventLogShape, path: string, cut: number, window: number) =>
  Effect.gen(function* () {
    removeReadModelFiles(path)
    const db = Context.get(yield* Layer.build(ReadModel.layer(path)), ReadModel)
    const apply = makeApplier(db)
    const run = (from: number, upto: number) =>
      log.read(">", from).pipe(
        Stream.takeWhile((m) => m.seq <= upto),
        Stream.grouped(window),
        Stream.runForEach((chunk) => Effect.sync(() => apply(Chunk.toReadonlyArray(chunk)))),
      )
    yield* run(1, cut)
    yield* run(appliedOffset(db) + 1, Number.MAX_SAFE_INTEGER)
    return readModelDigest(db)
  }).pipe(Effect.scoped)

describe("npm run replay -- --help", () => {
  it("names exactly the tables it compares, each one a table of today's read model", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-replay-help-"))
    try {
      const out = await runReplay(dir, undefined, "--help")
      expect(out.code).toBe(0)
      const named = /compares their tables \(([^)]*)\)/.exec(out.stdout)?.[1]?.split(", ")
      const path = join(dir, "read.sqlite")
      const tables = await Effect.runPromise(
        Effect.map(ReadModel, (db) =>
          (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((t) => t.name),
        ).pipe(Effect.provide(ReadModel.layer(path))),
      )
      expect(named).toEqual([...contentTables])
      for (const table of named ?? []) expect(tables).toContain(table)
      expect(out.stdout).not.toContain("inputs")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe.each(["embedded", "nats"] as const)("npm run replay on the %s event log", (backend) => {
  let nats: NatsServer | undefined
  let sim: Simulator
  let sluice: Sluice
  let livePath: string
  let logLayer: Layer.Layer<EventLog, LogUnavailable>
  let originalDigest: ReadModelDigest
  let served: { batches: Array<any>; results: Array<Array<any>> }
  const replay = (...args: Array<string>) => runReplay(sluice.dataDir, nats?.url, ...args)

  const start = (dataDir?: string) =>
    startSluice({
      ...(nats === undefined ? {} : { natsUrl: nats.url }),
      ...(dataDir === undefined ? {} : { dataDir }),
      models: [
        { id: "glm-5.3-flash", upstream_url: sim.url, batch_concurrency: 4 },
        { id: "qwen3.6-35b", upstream_url: sim.url, batch_concurrency: 2 },
      ],
    })

  const snapshot = async (url: string) => {
    const api = client(url)
    const batches = (await api.call("GET", "/v1/batches?limit=100")).body.data as Array<any>
    return { batches, results: await Promise.all(batches.map((b) => api.allResults(b.id))) }
  }

  beforeAll(async () => {
    sim = await startSimulator()
    if (backend === "nats") nats = await startNatsServer()
    sluice = await start()
    livePath = join(sluice.dataDir, `read.${backend}.sqlite`)
    logLayer =
      nats === undefined
        ? SqliteEventLog.layer({ path: join(sluice.dataDir, "log.sqlite") })
        : JetStreamEventLog.layer({ url: nats.url })

    const api = client(sluice.url)
    expect((await api.admin("POST", "/admin/v1/accounts", { id: "acme", tier: "internal", concurrency: 3 })).status).toBe(200)
    expect((await api.admin("PATCH", "/admin/v1/accounts/acme", { daily_quota_usd: 25 })).status).toBe(200)
    const key = await api.admin("POST", "/admin/v1/accounts/acme/keys", {})
    const spare = await api.admin("POST", "/admin/v1/accounts/acme/keys", { expires_at: 4_102_444_800 })
    expect((await api.admin("POST", `/admin/v1/keys/${spare.body.id}/revoke`)).status).toBe(200)
    const acme = client(sluice.url, key.body.key)

    const mixed = await api.call("POST", "/v1/batches", {
      requests: [
        chatRow("ok-1", "What is 2 + 2?"),
        chatRow("refused", `Say something forbidden ${simDirective.status(400)}`),
        chatRow("flaky", `Eventually fine ${simDirective.fail(2, 503)}`),
        chatRow("other-model", "Name a colour.", "qwen3.6-35b"),
        chatRow("long", `Tell a long story ${simDirective.tokens(300)}`, "glm-5.3-flash", { max_tokens: 500 }),
      ],
      metadata: { suite: "replay" },
    })
    const theirs = await acme.call("POST", "/v1/batches", {
      requests: [chatRow("a-1", "Hello from acme"), chatRow("a-2", `Busy once ${simDirective.fail(1, 429)}`)],
    })
    const slow = await api.call("POST", "/v1/batches", {
      requests: Array.from({ length: 12 }, (_, i) =>
        chatRow(`slow-${i}`, `Take your time ${i} ${simDirective.latency(300)}`, "qwen3.6-35b"),
      ),
    })
    expect([mixed.status, theirs.status, slow.status]).toEqual([200, 200, 200])
    expect((await api.call("POST", `/v1/batches/${slow.body.id}/cancel`)).status).toBe(200)

    const done = await Promise.all([api.waitFinal(mixed.body.id), acme.waitFinal(theirs.body.id), api.waitFinal(slow.body.id)])
    expect(done.map((b) => b.status)).toEqual(["completed", "completed", "cancelled"])
    expect(done[0].request_counts).toEqual({ total: 5, completed: 4, failed: 1 })
    expect((await api.allResults(mixed.body.id)).map((r) => [r.custom_id, r.status])).toEqual([
      ["ok-1", "completed"],
      ["refused", "failed"],
      ["flaky", "completed"],
      ["other-model", "completed"],
      ["long", "completed"],
    ])

    // Deleted last: its history is purged, and its tombstone is the last stored event.
    const doomed = await api.call("POST", "/v1/batches", { requests: [chatRow("gone", "Forget me")] })
    await api.waitFinal(doomed.body.id)
    expect((await api.call("DELETE", `/v1/batches/${doomed.body.id}`)).status).toBe(200)

    served = await snapshot(sluice.url)
    expect(served.batches.map((b) => b.status).sort()).toEqual(["cancelled", "completed"])
    expect(await sluice.stop("SIGTERM")).toBe(0)
    originalDigest = fileDigest(livePath)
  }, 120_000)

  afterAll(async () => {
    await sluice?.stop()
    sluice?.cleanup()
    await nats?.stop()
    await sim?.close()
  })

  it("reports the replay of the whole log equal to the live read model, exit 0", async () => {
    const out = await replay()
    console.log(`[${backend}] npm run replay:\n${out.stdout}${out.stderr}`)
    expect(out.stdout).toMatch(/^result\s+equal/m)
    expect(out.code).toBe(0)
    expect(fileDigest(livePath)).toEqual(originalDigest)
  }, 60_000)

  it("rebuilds, in the test's own process, a read model whose digest is the live one's", async () => {
    const path = join(sluice.dataDir, "direct.sqlite")
    const rebuilt = await withLog(logLayer, (log) => rebuildReadModel(log, path))
    expect(rebuilt.events).toBeGreaterThan(40)
    expect(rebuilt.skipped).toBe(0)
    expect(rebuilt.appliedSeq).toBe(rebuilt.lastSeq) // the deleted batch's tombstone is the log's last event
    const digest = fileDigest(path)
    expect(digest).toEqual(originalDigest)
    expect(digest.tables.accounts.rows).toBe(2)
    expect(digest.tables.api_keys.rows).toBe(3)
    expect(digest.tables.batches.rows).toBe(3)
    expect(digest.tables.results.rows).toBe(5 + 2 + 12)
    expect(digest.tables.row_chunks.rows).toBe(3) // one rows_added event per batch, each small
    expect(digest.tables.tombstones.rows).toBe(1)
    removeReadModelFiles(path)
  }, 60_000)

  it("resuming the projections from their applied offset after any cut, in any window, gives the one-pass read model", async () => {
    const path = join(sluice.dataDir, "two-pass.sqlite")
    const lastSeq = await withLog(logLayer, (log) => log.lastSeq)
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: lastSeq }), fc.integer({ min: 1, max: 64 }), async (cut, window) => {
        const digest = await withLog(logLayer, (log) => replayInTwo(log, path, cut, window))
        expect(digest).toEqual(originalDigest)
      }),
      { numRuns: 6 },
    )
    removeReadModelFiles(path)
  }, 60_000)

  it("reports a live read model with one altered result as different, exit 1", async () => {
    const db = new Database(livePath)
    const changed = db
      .prepare(`UPDATE results SET status = 'failed' WHERE rowid = (SELECT min(rowid) FROM results WHERE status = 'completed')`)
      .run()
    db.close()
    expect(changed.changes).toBe(1)
    const out = await replay()
    expect(out.stdout).toMatch(/^result\s+different in results/m)
    expect(out.code).toBe(1)
  }, 60_000)

  it("reports a live read model with spending the log does not hold as different in usage", async () => {
    const db = new Database(livePath)
    db.prepare(`INSERT INTO usage (account_id, day, usd) VALUES ('bootstrap', 20000, 1.5)`).run()
    db.close()
    const out = await replay()
    expect(out.stdout).toMatch(/^result\s+different in .*usage: live 1 rows, rebuilt 0/m)
    expect(out.code).toBe(1)
  }, 60_000)

  it("with --apply replaces the live read model by the rebuilt one, and the restarted service serves the original results", async () => {
    const out = await replay("--apply")
    expect(out.stdout).toMatch(/^applied/m)
    expect(out.code).toBe(0)
    expect(fileDigest(livePath)).toEqual(originalDigest)
    sluice = await start(sluice.dataDir)
    expect(await snapshot(sluice.url)).toEqual(served)
  }, 60_000)

  it("refuses --apply while the service holds the live read model, exit 2", async () => {
    const out = await replay("--apply")
    expect(out.stderr).toMatch(/refusing to --apply/)
    expect(out.code).toBe(2)
    expect(await sluice.stop("SIGTERM")).toBe(0)
    expect(fileDigest(livePath)).toEqual(originalDigest)
  }, 60_000)

  it("says a live read model behind the log is not compared, exit 1, and --apply brings it up to the log", async () => {
    const late = { type: "account_created", account_id: "late", tier: "standard", daily_quota_usd: null, concurrency: null, models: null, at: 1 }
    await withLog(logLayer, (log) =>
      log.append([{ subject: "account.late.account_created", data: new TextEncoder().encode(JSON.stringify(late)) }]),
    )
    const out = await replay()
    expect(out.stdout).toMatch(/^result\s+not compared: the live read model is behind the log/m)
    expect(out.code).toBe(1)
    expect((await replay("--apply")).code).toBe(0)
    expect(fileDigest(livePath).tables.accounts.rows).toBe(originalDigest.tables.accounts.rows + 1)
    expect((await replay()).code).toBe(0)
  }, 60_000)
})
