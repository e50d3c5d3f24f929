import { Context, Deferred, Effect, Fiber, Layer, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import * as BatchWriter from "../src/actors/BatchWriter.js"
import type { BatchCommand } from "../src/domain/batch/decide.js"
import { EventLog } from "../src/eventlog/EventLog.js"
import * as SqliteEventLog from "../src/eventlog/SqliteEventLog.js"
import * as Projector from "../src/projections/Projector.js"
import { ReadModel } from "../src/projections/ReadModel.js"
import { InstanceId, Metrics } from "../src/metrics/Metrics.js"

/** The writer over a real embedded log, read model and projector, as the service builds them. */
const writerWithMetrics = (dir: string) =>
  Effect.map(
    Layer.build(
      BatchWriter.Live.pipe(
        Layer.provideMerge(Projector.Live),
        Layer.provideMerge(ReadModel.layer(join(dir, "read.sqlite"))),
        Layer.provideMerge(SqliteEventLog.layer({ path: join(dir, "log.sqlite") })),
        Layer.provideMerge(Metrics.live),
        Layer.provide(InstanceId.layer("test")),
      ),
    ),
    (context) => ({ writer: Context.get(context, BatchWriter.BatchWriter), metrics: Context.get(context, Metrics) }),
  )
const writerIn = (dir: string) => Effect.map(writerWithMetrics(dir), ({ writer }) => writer)

const completed = (row: number, at: number): BatchCommand => ({
  type: "SettleRow",
  row,
  attempt: 1,
  at,
  outcome: { _tag: "Completed", response: { status_code: 200, request_id: `req_${row}`, body: {} }, costUsd: 0 },
})

const lane = { model: "m", owner: "test", revision: 1, valid: () => true, validThrough: () => Number.POSITIVE_INFINITY }

describe("the batch writer", () => {
  const dirs: Array<string> = []
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })))

  // A model's slot is free once the model answers, before the row's result is in the log, so another
  // row of the batch can be decided while the batch's closing events are still being appended.
  it("a command decided while a batch's closing events are being appended sees the batch those events leave", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-writer-"))
    dirs.push(dir)
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const writer = yield* writerIn(dir)
          const { batchId } = yield* writer.create({
            accountId: "acc",
            keyId: "key",
            completionWindowMs: 86_400_000,
            metadata: null,
            requests: [0, 1, 2].map((i) => ({ custom_id: `r${i}`, model: "m", body: {} })),
          })
          for (const row of [0, 1]) yield* writer.executeRow(batchId, { type: "StartRow", row, at: 1 }, lane)
          yield* writer.execute(batchId, { type: "Cancel", at: 2 })
          yield* writer.executeRow(batchId, completed(0, 3), lane)

          const closing = yield* writer.decideRow(batchId, completed(1, 4), lane)
          expect(closing.events.map((e) => e.type)).toEqual(["row_completed", "batch_cancelled"])
          // Decided before those two events are in the log: the cancelled batch starts nothing.
          const late = yield* writer.executeRow(batchId, { type: "StartRow", row: 2, at: 5 }, lane)
          expect(late.events).toEqual([])
          yield* closing.written

          // Nothing runs, so the batch may be deleted (a writer that had reloaded the batch from the
          // read model before the closing events reached it would still count two rows running).
          const deleted = yield* writer.execute(batchId, { type: "Delete", at: 6 })
          expect(deleted.events.map((e) => e.type)).toEqual(["batch_deleted"])
        }),
      ),
    )
  })

  it("rows a cancel settles together are counted by their model once the cancel is in the log", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-writer-"))
    dirs.push(dir)
    const settled = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const { writer, metrics } = yield* writerWithMetrics(dir)
          const models = ["m1", "m2", "m1", "m2", "m2"]
          const { batchId } = yield* writer.create({
            accountId: "acc",
            keyId: "key",
            completionWindowMs: 86_400_000,
            metadata: null,
            requests: models.map((model, i) => ({ custom_id: `r${i}`, model, body: {} })),
          })
          // Row 0 (m1) finishes and row 1 (m2) runs: the cancel settles rows 2 (m1), 3 and 4 (m2).
          yield* writer.executeRow(batchId, { type: "StartRow", row: 0, at: 1 }, lane)
          yield* writer.executeRow(batchId, completed(0, 2), lane)
          yield* writer.executeRow(batchId, { type: "StartRow", row: 1, at: 3 }, lane)
          yield* writer.execute(batchId, { type: "Cancel", at: 4 })
          return (yield* Effect.promise(() => metrics.registry.getSingleMetric("sluice_rows_settled_total")!.get())).values
        }),
      ),
    )
    const count = (model: string, outcome: string) =>
      settled.find((v) => v.labels.model === model && v.labels.outcome === outcome)?.value ?? 0
    expect(count("m1", "cancelled")).toBe(1)
    expect(count("m2", "cancelled")).toBe(2)
  })
})

describe("the batch writer's reads of a batch from the log", () => {
  it("a caller interrupted while the batch is being read does not leave the read pending for the next caller", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-writer-"))
    try {
      await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            // The log's reads wait at a gate while `held` is set: a log that has stopped answering.
            let held: Deferred.Deferred<void> | undefined
            const gated = Layer.effect(
              EventLog,
              Effect.map(EventLog, (inner) => ({
                ...inner,
                read: (filter: string, fromSeq: number, options?: Parameters<typeof inner.read>[2]) =>
                  Stream.unwrap(Effect.as(held === undefined ? Effect.void : Deferred.await(held), inner.read(filter, fromSeq, options))),
              })),
            ).pipe(Layer.provideMerge(SqliteEventLog.layer({ path: join(dir, "log.sqlite") })))
            const context = yield* Layer.build(
              BatchWriter.Live.pipe(
                Layer.provideMerge(Projector.Live),
                Layer.provideMerge(ReadModel.layer(join(dir, "read.sqlite"))),
                Layer.provideMerge(gated),
                Layer.provideMerge(Metrics.live),
                Layer.provide(InstanceId.layer("test")),
              ),
            )
            const writer = Context.get(context, BatchWriter.BatchWriter)
            const { batchId } = yield* writer.create({
              accountId: "acc",
              keyId: "key",
              completionWindowMs: 86_400_000,
              metadata: null,
              requests: [0, 1].map((i) => ({ custom_id: `r${i}`, model: "m", body: {} })),
            })
            held = yield* Deferred.make<void>()
            writer.invalidate(batchId)
            // The first caller starts the read and is interrupted while the log holds it (its actor stopped).
            const first = yield* Effect.fork(writer.executeRow(batchId, { type: "StartRow", row: 0, at: 1 }, lane))
            yield* Effect.sleep("50 millis")
            yield* Fiber.interrupt(first)
            yield* Deferred.succeed(held, undefined)
            held = undefined
            // The next caller gets the batch: the read went on without the caller that started it.
            const next = yield* writer.executeRow(batchId, { type: "StartRow", row: 1, at: 2 }, lane).pipe(Effect.timeout("5 seconds"))
            expect(next.events.map((e) => e.type)).toContain("row_started")
          }),
        ),
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
