import { createHash } from "node:crypto"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { gunzipSync } from "node:zlib"
import Database from "better-sqlite3"
import { Context, Effect, Layer, Stream } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { makeChainCheck } from "../../src/audit/chainCheck.js"
import { EventLog, type LogUnavailable } from "../../src/eventlog/EventLog.js"
import * as JetStreamEventLog from "../../src/eventlog/JetStreamEventLog.js"
import * as SqliteEventLog from "../../src/eventlog/SqliteEventLog.js"
import { rebuildReadModel } from "../../src/projections/rebuild.js"
import { asyncApiEventTypes, type LogContents, logContents } from "../fixtures/eventTypes.js"
import { type ReadModelSnapshot, readModelSnapshot } from "../fixtures/readModelSnapshot.js"
import { importStream } from "../fixtures/streamFile.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"

/*
 * Logs written by earlier versions replay through today's code to the read model they made then.
 * Every set under test/fixtures/logs/ (written by `npm run fixtures:logs`, see docs/events.md) holds
 * an embedded SQLite log and a JetStream stream exported as JSON lines, each with the read model its
 * replay gave when it was written (checked then against the live read model of the Sluice that wrote
 * it, and against what its API answered). Each is replayed into a fresh read model (the stream
 * imported into a fresh nats-server first) and must come out the same, batch objects, results pages
 * and request bodies included, with every hash chain intact.
 *
 * FIXTURES MAY ONLY BE ADDED, NEVER DELETED OR REWRITTEN. A change that makes an old fixture replay
 * differently breaks the promise that a log written by any release replays through every later one:
 * fix the code (an upcaster in src/domain/versions/upcast.ts, a projection), not the fixture. Each
 * set's meta.json holds its files' SHA-256, checked below, so that a fixture rewritten in place fails.
 */

const ROOT = new URL("../fixtures/logs/", import.meta.url).pathname
const sets = existsSync(ROOT) ? readdirSync(ROOT, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort() : []
const scratch = mkdtempSync(join(tmpdir(), "sluice-fixtures-"))
const servers: Array<NatsServer> = []
afterAll(async () => {
  for (const server of servers) await server.stop()
  rmSync(scratch, { recursive: true, force: true })
})

const withLog = <A>(layer: Layer.Layer<EventLog, LogUnavailable>, use: (log: EventLog["Type"]) => Effect.Effect<A, LogUnavailable>) =>
  Effect.runPromise(Effect.scoped(Effect.flatMap(Layer.build(layer), (context) => use(Context.get(context, EventLog)))))

/** The fixture's log, opened through today's adapter on a copy: a file in a scratch directory, or a fresh server's stream. */
const openFixture = async (set: string, backend: "embedded" | "nats"): Promise<Layer.Layer<EventLog, LogUnavailable>> => {
  const dir = join(ROOT, set, backend)
  if (backend === "embedded") {
    const path = join(scratch, `${set}.log.sqlite`)
    writeFileSync(path, gunzipSync(readFileSync(join(dir, "log.sqlite.gz"))))
    return SqliteEventLog.layer({ path })
  }
  const server = await startNatsServer()
  servers.push(server)
  await importStream(server.url, gunzipSync(readFileSync(join(dir, "stream.jsonl.gz"))).toString("utf8"))
  return JetStreamEventLog.layer({ url: server.url })
}

const seen: Record<"embedded" | "nats", Array<LogContents>> = { embedded: [], nats: [] }

type Results = ReadonlyArray<{ readonly data: ReadonlyArray<{ readonly status: string; readonly response: any }> }>

/** The completed result lines' usage, summed as a batch object's `usage` counts it. */
const usageOfResults = (pages: Results) => {
  const usage = { input_tokens: 0, input_tokens_details: { cached_tokens: 0 }, output_tokens: 0, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 0 }
  for (const line of pages.flatMap((page) => page.data)) {
    if (line.status !== "completed") continue
    const u = line.response.body.usage
    usage.input_tokens += u.prompt_tokens
    usage.input_tokens_details.cached_tokens += u.prompt_tokens_details?.cached_tokens ?? 0
    usage.output_tokens += u.completion_tokens
    usage.output_tokens_details.reasoning_tokens += u.completion_tokens_details?.reasoning_tokens ?? 0
    usage.total_tokens += u.total_tokens
  }
  return usage
}

/**
 * Fields the batch object gained after a set was written are not in its expected read model, which
 * may not be rewritten: each is checked by its own rule against the same replay's results instead.
 */
const laterBatchFields: Record<string, (results: Results) => unknown> = {
  usage: usageOfResults,
  priority: () => "standard",
  // Read outside the read model (its actors' facts): a snapshot's batch object has none.
  waiting_on: () => null,
}

/** Columns rows of the read model gained after a set was written: nothing in an older log fills them, so they replay null. */
const laterRowFields = { accounts: ["max_priority"], streams: ["priority"] } as const

const withoutLaterFields = (
  section: keyof typeof laterRowFields,
  rows: Record<string, Record<string, unknown>>,
  expected: Record<string, Record<string, unknown>> | undefined,
) =>
  Object.fromEntries(
    Object.entries(rows).map(([id, row]) => {
      const kept = { ...row }
      for (const field of laterRowFields[section]) {
        if (expected?.[id] === undefined || field in expected[id]) continue
        expect(row[field], `${section} ${id}: ${field}`).toBeNull()
        delete kept[field]
      }
      return [id, kept]
    }),
  )

/** Sections the snapshot gained after a set was written: a set without one predates what fills it, so its replay has none. */
const laterSections = ["responses", "streams", "stream_tombstones", "files", "file_tombstones", "batch_files"] as const

type Rows = Record<string, Record<string, unknown>>

const asRecorded = (
  snapshot: ReadModelSnapshot,
  expected: { readonly batches: Rows; readonly accounts: Rows; readonly streams?: Rows },
) => {
  const later: Partial<Record<(typeof laterSections)[number], unknown>> = {}
  for (const section of laterSections) {
    if (section in expected) later[section] = snapshot[section]
    else expect(Object.keys(snapshot[section]), section).toEqual([])
  }
  if (later.streams !== undefined) later.streams = withoutLaterFields("streams", later.streams as Rows, expected.streams)
  const batches: Record<string, unknown> = {}
  for (const [id, batch] of Object.entries(snapshot.batches as Record<string, Record<string, unknown>>)) {
    const kept = { ...batch }
    for (const [field, rule] of Object.entries(laterBatchFields)) {
      if (expected.batches[id] === undefined || field in expected.batches[id]) continue
      expect(batch[field], `${id}: ${field}`).toEqual(rule(snapshot.results[id] as Results))
      delete kept[field]
    }
    batches[id] = kept
  }
  const { responses: _, streams: __, stream_tombstones: ___, files: ____, file_tombstones: _____, batch_files: ______, ...earlier } = snapshot
  return { ...earlier, ...later, batches, accounts: withoutLaterFields("accounts", earlier.accounts as Rows, expected.accounts) }
}

describe("the fixture logs", () => {
  it("there is at least one set, and each is as it was written: its files match the SHA-256 its meta.json holds", () => {
    expect(sets.length).toBeGreaterThan(0)
    for (const set of sets) {
      const meta = JSON.parse(readFileSync(join(ROOT, set, "meta.json"), "utf8")) as { files: Record<string, string> }
      expect(Object.keys(meta.files).sort(), set).toEqual(["embedded/expected.json", "embedded/log.sqlite.gz", "nats/expected.json", "nats/stream.jsonl.gz"])
      for (const [file, sha256] of Object.entries(meta.files)) {
        expect(createHash("sha256").update(readFileSync(join(ROOT, set, file))).digest("hex"), `${set}/${file}`).toBe(sha256)
      }
    }
  })

  describe.each(["embedded", "nats"] as const)("on the %s log", (backend) => {
    it.each(sets)("%s replays into a fresh read model equal to the one recorded when it was written, and every chain holds", async (set) => {
      const expected = JSON.parse(readFileSync(join(ROOT, set, backend, "expected.json"), "utf8"))
      const readModel = join(scratch, `${set}.${backend}.read.sqlite`)
      const { snapshot, contents, chains } = await withLog(await openFixture(set, backend), (log) =>
        Effect.gen(function* () {
          yield* rebuildReadModel(log, readModel)
          const db = new Database(readModel, { readonly: true })
          const snapshot = yield* readModelSnapshot(db, log).pipe(Effect.ensuring(Effect.sync(() => db.close())))
          const check = makeChainCheck()
          yield* log.read(">", 1).pipe(Stream.runForEach((m) => Effect.sync(() => check.add(m))))
          return { snapshot, contents: yield* logContents(log), chains: { problems: check.problems(), ...check.counts() } }
        }),
      )
      seen[backend].push(contents)
      expect(asRecorded(snapshot, expected)).toEqual(expected)
      // Each set has completed rows, so the tokens checked above are not zeros only.
      expect(Object.values(snapshot.batches).some((b) => (b as { usage: { total_tokens: number } }).usage.total_tokens > 0)).toBe(true)
      expect(chains.problems).toEqual([])
      expect(chains.unchained).toBe(0)
      expect(chains.checked).toBeGreaterThan(0)
      // What each set must hold, so that a set written by a changed generator cannot quietly lose it.
      expect(contents.types).toContain("batch_purged")
      expect(contents.types).toContain("lane_window")
      expect([...contents.chunked]).toEqual(expect.arrayContaining(["row_bodies", "lane_window"]))
    })

    // Row events are written inside lane windows today: they count where a window holds them.
    it("the sets hold every event type the AsyncAPI document names", () => {
      expect(seen[backend]).toHaveLength(sets.length)
      const types = new Set(seen[backend].flatMap((c) => [...c.types]))
      expect(asyncApiEventTypes().filter((t) => !types.has(t))).toEqual([])
    })
  })
})
