import { Context, Deferred, Effect, Fiber, Layer, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import * as BatchWriter from "../src/actors/BatchWriter.js"
import type { BatchCommand } from "../src/domain/batch/decide.js"
import { type AppendInput, EventLog, LogUnavailable, WrongLastSequence } from "../src/eventlog/EventLog.js"
import { isLaneSubject } from "../src/domain/batch/subjects.js"
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

describe("the batch writer's lane windows", () => {
  // On NATS a publish whose ack timed out may still be in the connection's buffer and reach the server
  // after the writer gave it up: stored ahead of the next window, on the place that window expects.
  it("a window stored after its append was given up on never stands for the next window's events", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-writer-"))
    try {
      await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            let giveUpNextWindow = false
            let late: ReadonlyArray<AppendInput> | undefined
            const delaying = Layer.effect(
              EventLog,
              Effect.map(EventLog, (inner) => ({
                ...inner,
                append: (inputs: ReadonlyArray<AppendInput>) =>
                  Effect.suspend(() => {
                    if (giveUpNextWindow && inputs.some((m) => isLaneSubject(m.subject))) {
                      giveUpNextWindow = false
                      late = inputs
                      return Effect.fail(new LogUnavailable({ message: "publish failed: timeout" }))
                    }
                    const before = late === undefined ? Effect.void : Effect.ignore(inner.append(late))
                    late = undefined
                    return Effect.zipRight(before, inner.append(inputs))
                  }),
              })),
            ).pipe(Layer.provideMerge(SqliteEventLog.layer({ path: join(dir, "log.sqlite") })))
            const context = yield* Layer.build(
              BatchWriter.Live.pipe(
                Layer.provideMerge(Projector.Live),
                Layer.provideMerge(ReadModel.layer(join(dir, "read.sqlite"))),
                Layer.provideMerge(delaying),
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
              requests: [0, 1, 2].map((i) => ({ custom_id: `r${i}`, model: "m", body: {} })),
            })
            yield* writer.executeRow(batchId, { type: "StartRow", row: 0, at: 1 }, lane)

            giveUpNextWindow = true
            const givenUp = yield* Effect.either(writer.executeRow(batchId, { type: "StartRow", row: 1, at: 2 }, lane))
            expect(givenUp._tag).toBe("Left")
            // Decided on the batch read again (the log does not hold row 1's start yet), appended after it.
            const next = yield* Effect.either(writer.executeRow(batchId, { type: "StartRow", row: 2, at: 3 }, lane))

            writer.invalidate(batchId)
            const inLog = yield* writer.rowPhase(batchId, 2)
            if (next._tag === "Right") expect(inLog?.status, "row 2's start was reported written").toBe("running")
            // Row 1's late window is the log's: the writer learns it on its next read.
            expect((yield* writer.rowPhase(batchId, 1))?.status).toBe("running")
          }),
        ),
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  // A model actor awaits a start's append only once the upstream has answered, so a refused window is
  // found out late: meanwhile other rows' decisions are made on the batch as the writer holds it, and their
  // append may be on its way when the refused decision reads the batch again.
  it("a batch read again after a refused window holds every decision the log took meanwhile", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-writer-"))
    try {
      await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            let refuseNextWindow = false
            let holdNextWindow = false
            const refused = yield* Deferred.make<void>()
            let read: Deferred.Deferred<void> | undefined
            const racing = Layer.effect(
              EventLog,
              Effect.map(EventLog, (inner) => ({
                ...inner,
                read: (filter: string, fromSeq: number, options?: Parameters<typeof inner.read>[2]) =>
                  inner.read(filter, fromSeq, options).pipe(Stream.ensuring(read === undefined ? Effect.void : Deferred.succeed(read, undefined))),
                append: (inputs: ReadonlyArray<AppendInput>) =>
                  Effect.suspend(() => {
                    const window = inputs.find((m) => isLaneSubject(m.subject))
                    if (window !== undefined && refuseNextWindow) {
                      refuseNextWindow = false
                      // Another window took the place: nothing stored.
                      return Effect.zipRight(
                        Deferred.succeed(refused, undefined),
                        Effect.fail(new WrongLastSequence({ subject: window.subject, expected: window.expectLastSubjectSeq ?? 0 })),
                      )
                    }
                    if (window !== undefined && holdNextWindow) {
                      holdNextWindow = false
                      // Stored once the batch has been read again (or after a while, if nothing reads it before).
                      return Effect.zipRight(Effect.race(Deferred.await(read!), Effect.sleep("300 millis")), inner.append(inputs))
                    }
                    return inner.append(inputs)
                  }),
              })),
            ).pipe(Layer.provideMerge(SqliteEventLog.layer({ path: join(dir, "log.sqlite") })))
            const context = yield* Layer.build(
              BatchWriter.Live.pipe(
                Layer.provideMerge(Projector.Live),
                Layer.provideMerge(ReadModel.layer(join(dir, "read.sqlite"))),
                Layer.provideMerge(racing),
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
              requests: [0, 1, 2].map((i) => ({ custom_id: `r${i}`, model: "m", body: {} })),
            })
            yield* writer.executeRow(batchId, { type: "StartRow", row: 0, at: 1 }, lane)

            refuseNextWindow = true
            const first = yield* writer.decideRow(batchId, { type: "StartRow", row: 1, at: 2 }, lane)
            yield* Deferred.await(refused)
            // The refused append's drain ends; nobody has awaited its decision yet.
            yield* Effect.sleep("50 millis")
            holdNextWindow = true
            read = yield* Deferred.make<void>()
            const second = yield* writer.decideRow(batchId, { type: "StartRow", row: 2, at: 3 }, lane)
            expect(second.events.map((e) => e.type)).toEqual(["row_started"])
            // The refused decision is found out: the writer reads the batch again, row 2's window on its way.
            expect((yield* Effect.either(first.written))._tag).toBe("Left")
            const secondWritten = yield* Effect.either(second.written)
            expect(secondWritten._tag, "row 2's start, decided after the refused append had ended, is stored").toBe("Right")
            // Row 2's start is in the log, so the batch the writer holds now has it running.
            const settled = yield* writer.executeRow(batchId, completed(2, 4), lane)
            expect(settled.events.map((e) => e.type)).toEqual(["row_completed"])
          }),
        ),
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
