import { Chunk, Context, Effect, Exit, Layer, Scope, Stream } from "effect"
import Database from "better-sqlite3"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { CHUNK_HEADER, withChunking } from "../src/eventlog/chunking.js"
import * as SqliteEventLog from "../src/eventlog/SqliteEventLog.js"
import { appliedOffset, makeApplier, resumeOffset } from "../src/projections/Projector.js"
import { ReadModel } from "../src/projections/ReadModel.js"
import { readModelDigest, rebuildReadModel } from "../src/projections/rebuild.js"

const encoder = new TextEncoder()
const event = (o: object) => encoder.encode(JSON.stringify(o))
const B = "batch_cut"
const completed = (row: number, pad: number) =>
  event({ type: "row_completed", batch_id: B, row, attempt: 1, at: 1, response: { status_code: 200, request_id: "r", body: { pad: "x".repeat(pad) } }, cost_usd: 0 })

/*
 * A multi-part event is delivered at its last part's seq. When another writer's event lands between
 * its parts and the projector stops right after that event, it must resume at the first part, or
 * the large event is lost on restart.
 */
describe("projections resumed after a stop", () => {
  const dirs: Array<string> = []
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })))

  it("a stop between the parts of a multi-part event loses nothing: resuming gives the one-pass read model", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-resume-"))
    dirs.push(dir)
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const raw = yield* SqliteEventLog.makeRaw({ path: join(dir, "log.sqlite") })
          const log = withChunking(raw)
          yield* log.append([
            { subject: `batch.${B}.rows_added`, data: event({ type: "rows_added", batch_id: B, first: 0, rows: [{ custom_id: "a", model: "m", body: {} }, { custom_id: "b", model: "m", body: {} }] }) },
            { subject: `batch.${B}.batch_created`, data: event({ type: "batch_created", batch_id: B, account_id: "acc", key_id: "k", created_at: 0, expires_at: 1e9, completion_window: "24h", metadata: null, total: 2, models: ["m"] }) },
          ])
          yield* log.append([0, 1].map((row) => ({ subject: `batch.${B}.row_started`, data: event({ type: "row_started", batch_id: B, row, attempt: 1, at: 1 }) })))
          // Seqs 5 and 7 are the parts of row 0's large result; seq 6 is row 1's, from another writer.
          const big = completed(0, 64)
          const half = Math.ceil(big.length / 2)
          yield* raw.append([{ subject: `batch.${B}.row_completed`, data: big.subarray(0, half), headers: { [CHUNK_HEADER]: "c1 0 2" } }])
          yield* raw.append([{ subject: `batch.${B}.row_completed`, data: completed(1, 8) }])
          yield* raw.append([{ subject: `batch.${B}.row_completed`, data: big.subarray(half), headers: { [CHUNK_HEADER]: "c1 1 2" } }])

          yield* rebuildReadModel(log, join(dir, "one-pass.sqlite"))
          const db = Context.get(yield* Layer.build(ReadModel.layer(join(dir, "resumed.sqlite"))), ReadModel)
          const apply = makeApplier(db)
          const run = (from: number, upto: number) =>
            log.read(">", from).pipe(
              Stream.takeWhile((m) => m.seq <= upto),
              Stream.runForEachChunk((c) => Effect.sync(() => apply(Chunk.toReadonlyArray(c)))),
            )
          yield* run(1, 6)
          expect(appliedOffset(db)).toBe(6)
          expect(resumeOffset(db)).toBe(5)
          yield* run(resumeOffset(db), Number.MAX_SAFE_INTEGER)
          expect(appliedOffset(db)).toBe(7)

          const onePass = new Database(join(dir, "one-pass.sqlite"), { readonly: true })
          expect(db.prepare("SELECT idx, status FROM results ORDER BY idx").all()).toEqual([
            { idx: 0, status: "completed" },
            { idx: 1, status: "completed" },
          ])
          expect(readModelDigest(db).sha256).toBe(readModelDigest(onePass).sha256)
          onePass.close()
        }),
      ),
    )
  })
})

describe("projections given a duplicated row event", () => {
  it("a row event delivered twice (a publish retried past JetStream's de-duplication window) is counted once", () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-dup-"))
    const scope = Effect.runSync(Scope.make())
    const db = Effect.runSync(Effect.map(Layer.buildWithScope(ReadModel.layer(join(dir, "read.sqlite")), scope), (ctx) => Context.get(ctx, ReadModel)))
    try {
      const apply = makeApplier(db)
      const at = (seq: number, subject: string, data: Uint8Array) => ({ seq, subject, data, time: 0 })
      const started = event({ type: "row_started", batch_id: B, row: 0, attempt: 1, at: 1 })
      const done = completed(0, 4)
      apply([
        at(1, `batch.${B}.rows_added`, event({ type: "rows_added", batch_id: B, first: 0, rows: [{ custom_id: "a", model: "m", body: {} }, { custom_id: "b", model: "m", body: {} }] })),
        at(2, `batch.${B}.batch_created`, event({ type: "batch_created", batch_id: B, account_id: "acc", key_id: "k", created_at: 0, expires_at: 1e9, completion_window: "24h", metadata: null, total: 2, models: ["m"] })),
        at(3, `batch.${B}.row_started`, started),
        at(4, `batch.${B}.row_completed`, done),
        at(5, `batch.${B}.row_started`, started),
        at(6, `batch.${B}.row_completed`, done),
      ])
      const counts = db.prepare("SELECT completed, failed, running FROM batches WHERE id = ?").get(B)
      expect(counts).toEqual({ completed: 1, failed: 0, running: 0 })
      expect(db.prepare("SELECT status, attempts FROM results WHERE batch_id = ? AND idx = 0").get(B)).toEqual({ status: "completed", attempts: 1 })
    } finally {
      Effect.runSync(Scope.close(scope, Exit.void))
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
