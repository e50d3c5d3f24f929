import { Chunk, Context, Effect, Layer, Stream } from "effect"
import fc from "fast-check"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { makeBodyCache } from "../src/actors/bodyCache.js"
import { appendBodies, rowsMessages } from "../src/actors/rowsAdded.js"
import { withChunking } from "../src/eventlog/chunking.js"
import type { EventLogShape } from "../src/eventlog/EventLog.js"
import * as SqliteEventLog from "../src/eventlog/SqliteEventLog.js"
import { makeApplier } from "../src/projections/Projector.js"
import { ReadModel } from "../src/projections/ReadModel.js"
import { resultReads } from "../src/projections/resultReads.js"

const dir = mkdtempSync(join(tmpdir(), "sluice-bodies-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

const encoder = new TextEncoder()
const event = (o: object) => encoder.encode(JSON.stringify(o))

/** A log (small parts, so large bodies are stored in several) and a read model the projections keep up to date. */
const withLogAndReadModel = <A>(use: (log: EventLogShape, sync: Effect.Effect<void, unknown>, reads: ReturnType<typeof resultReads>) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const n = ++files
        const log = withChunking(yield* SqliteEventLog.makeRaw({ path: join(dir, `log-${n}.sqlite`), maxPayload: 4096 }))
        const db = Context.get(yield* Layer.build(ReadModel.layer(join(dir, `read-${n}.sqlite`))), ReadModel)
        const apply = makeApplier(db)
        let applied = 0
        const sync = Effect.flatMap(log.read(">", applied + 1).pipe(Stream.runCollect), (chunk) =>
          Effect.sync(() => {
            const messages = Chunk.toReadonlyArray(chunk)
            if (messages.length > 0) apply(messages)
            applied = Math.max(applied, ...messages.map((m) => m.seq))
          }),
        )
        return yield* use(log, sync, resultReads(db))
      }),
    ),
  )

const created = (batchId: string, total: number) => ({
  subject: `batch.${batchId}.batch_created`,
  data: event({ type: "batch_created", batch_id: batchId, account_id: "acc", key_id: "k", created_at: 0, expires_at: 1e12, completion_window: "24h", metadata: null, total, models: ["m"] }),
})

const body = fc.record({
  model: fc.constant("m"),
  // Padded: with parts of 4 KiB, most row_bodies events are stored in several.
  messages: fc.array(
    fc.record({ role: fc.constant("user"), content: fc.tuple(fc.string(), fc.nat({ max: 3000 })).map(([s, n]) => s + "y".repeat(n)) }),
    { minLength: 1, maxLength: 3 },
  ),
})

describe("a model's actor reads each row's request body from the log", () => {
  it("as written: bodies in row_bodies events, some in parts, taken in any order, across batches", () =>
    fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(body, { minLength: 1, maxLength: 120 }), { minLength: 1, maxLength: 3 }),
        fc.infiniteStream(fc.nat()),
        (batches, picks) =>
          withLogAndReadModel((log, sync, reads) =>
            Effect.gen(function* () {
              const ids = batches.map((_, b) => `batch_${b}`)
              for (const [b, bodies] of batches.entries()) {
                const rows = bodies.map((body, i) => ({ custom_id: `r${i}`, model: "m", body }))
                const messages = rowsMessages(ids[b]!, rows)
                const stored = yield* appendBodies(log, messages)
                yield* log.append([...messages.rowsAdded(stored), created(ids[b]!, rows.length)])
              }
              yield* sync
              const cache = makeBodyCache(reads, log)
              // Every row once, in an order drawn from the stream: batches and chunks interleave.
              const left = batches.flatMap((bodies, b) => bodies.map((_, row) => [b, row] as const))
              const it = picks[Symbol.iterator]()
              while (left.length > 0) {
                const [b, row] = left.splice(it.next().value % left.length, 1)[0]!
                const got = yield* cache.take(ids[b]!, row)
                expect(got).toBe(JSON.stringify(batches[b]![row]))
              }
            }),
          ),
      ),
      { numRuns: 25 },
    ))

  it("from a log written before row_bodies: the bodies inline in rows_added, one of them in parts", () =>
    withLogAndReadModel((log, sync, reads) =>
      Effect.gen(function* () {
        const B = "batch_old"
        const bodies = [{ n: 0 }, { n: 1, pad: "x".repeat(10_000) }, { n: 2 }]
        yield* log.append([
          { subject: `batch.${B}.rows_added`, data: event({ type: "rows_added", batch_id: B, first: 0, rows: bodies.slice(0, 2).map((b, i) => ({ custom_id: `r${i}`, model: "m", body: b })) }) },
          { subject: `batch.${B}.rows_added`, data: event({ type: "rows_added", batch_id: B, first: 2, rows: [{ custom_id: "r2", model: "m", body: bodies[2] }] }) },
          created(B, 3),
        ])
        yield* sync
        const cache = makeBodyCache(reads, log)
        for (const row of [2, 0, 1]) expect(yield* cache.take(B, row)).toBe(JSON.stringify(bodies[row]))
      }),
    ))

  it("answers nothing once the batch's events are purged", () =>
    withLogAndReadModel((log, sync, reads) =>
      Effect.gen(function* () {
        const B = "batch_gone"
        const messages = rowsMessages(B, [{ custom_id: "a", model: "m", body: { n: 1 } }])
        yield* log.append([...messages.rowsAdded(yield* appendBodies(log, messages)), created(B, 1)])
        yield* sync
        yield* log.purge(`batch.${B}.>`)
        expect(yield* makeBodyCache(reads, log).take(B, 0)).toBeUndefined()
        expect(yield* makeBodyCache(reads, log).take("batch_never", 0)).toBeUndefined()
      }),
    ))
})
