import { Context, Deferred, Effect, Fiber, Layer, type Scope, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import * as BatchWriter from "../src/actors/BatchWriter.js"
import * as FateStore from "../src/actors/fate/FateStore.js"
import type { BatchCommand } from "../src/domain/batch/decide.js"
import type { Ending } from "../src/domain/batch/fate.js"
import { type AppendInput, EventLog, LogUnavailable, WrongLastSequence } from "../src/eventlog/EventLog.js"
import { isLaneSubject } from "../src/domain/batch/subjects.js"
import * as SqliteEventLog from "../src/eventlog/SqliteEventLog.js"
import * as Projector from "../src/projections/Projector.js"
import { ReadModel } from "../src/projections/ReadModel.js"
import { writerStack } from "./support/writerStack.js"
import { InstanceId, Metrics } from "../src/metrics/Metrics.js"

const built = writerStack
const writerOn = <E>(dir: string, log: Layer.Layer<EventLog, E>) => Effect.map(built(dir, log), (context) => Context.get(context, BatchWriter.BatchWriter))
const embeddedLog = (dir: string) => SqliteEventLog.layer({ path: join(dir, "log.sqlite") })
/** The writer over a real embedded log. */
const writerWithMetrics = (dir: string) =>
  Effect.map(built(dir, embeddedLog(dir)), (context) => ({ writer: Context.get(context, BatchWriter.BatchWriter), metrics: Context.get(context, Metrics) }))
const writerIn = (dir: string) => Effect.map(writerWithMetrics(dir), ({ writer }) => writer)

const completed = (row: number, at: number): BatchCommand => ({
  type: "SettleRow",
  row,
  attempt: 1,
  at,
  outcome: { _tag: "Completed", response: { status_code: 200, request_id: `req_${row}`, body: {} }, costUsd: 0 },
})

/** A batch of `n` rows of the model "m". */
const batchOf = (n: number) => ({
  accountId: "acc",
  keyId: "key",
  completionWindowMs: 86_400_000,
  metadata: null,
  requests: Array.from({ length: n }, (_, i) => ({ custom_id: `r${i}`, model: "m", body: {} })),
})

const lane = { model: "m", owner: "test", revision: 1, valid: () => true, validThrough: () => Number.POSITIVE_INFINITY }

/** Runs `body` with a writer over a real embedded log in a temporary directory (removed after the test). */
const withWriter = (dirs: Array<string>, body: (writer: BatchWriter.BatchWriterShape) => Effect.Effect<void, unknown, Scope.Scope>) => {
  const dir = mkdtempSync(join(tmpdir(), "sluice-writer-"))
  dirs.push(dir)
  return Effect.runPromise(Effect.scoped(Effect.flatMap(writerIn(dir), body)))
}

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
          const { batchId } = yield* writer.create(batchOf(3))
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

  it("decides a row without an effect only when it holds the batch as it is, and tells when the log has stored it", async () => {
    await withWriter(dirs, (writer) =>
      Effect.gen(function* () {
        const { batchId } = yield* writer.create(batchOf(2))
        const stored = (decided: BatchWriter.DecidedNow) =>
          Effect.async<BatchWriter.Written | undefined>((resume) => decided.whenStored((w) => resume(Effect.succeed(w))))

        const start = writer.decideRowNow(batchId, { type: "StartRow", row: 0, at: 1 }, lane)!
        expect(start.events.map((e) => e.type)).toEqual(["batch_started", "row_started"])
        const startWritten = yield* stored(start)
        expect(startWritten?.events).toBe(start.events)
        expect(startWritten!.seq).toBeGreaterThan(0)
        // Told again once stored: at once, with the same.
        expect(yield* stored(start)).toEqual(startWritten)

        // Nothing to decide (the row runs), a lost lease, a batch it does not hold: undefined, having decided nothing.
        expect(writer.decideRowNow(batchId, { type: "StartRow", row: 0, at: 2 }, lane)).toBeUndefined()
        expect(writer.decideRowNow(batchId, { type: "StartRow", row: 1, at: 2 }, { ...lane, valid: () => false })).toBeUndefined()
        expect(writer.decideRowNow("batch_unknown", { type: "StartRow", row: 0, at: 2 }, lane)).toBeUndefined()
        writer.invalidate(batchId)
        expect(writer.decideRowNow(batchId, { type: "StartRow", row: 1, at: 2 }, lane)).toBeUndefined()
        expect((yield* writer.rowPhase(batchId, 1))?.status).not.toBe("running")

        // Read again by the effect, the batch is held: the last settle ends it, and says so.
        expect((yield* writer.executeRow(batchId, { type: "StartRow", row: 1, at: 3 }, lane)).events.map((e) => e.type)).toEqual(["row_started"])
        yield* writer.executeRow(batchId, completed(0, 4), lane)
        const last = writer.decideRowNow(batchId, completed(1, 5), lane)!
        expect(last.events.map((e) => e.type)).toEqual(["row_completed", "batch_completed"])
        const lastWritten = yield* stored(last)
        expect(lastWritten).toMatchObject({ finished: true })
        expect(lastWritten!.seq).toBeGreaterThan(startWritten!.seq)
        expect(yield* last.written()).toEqual(lastWritten)
      }),
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
            ).pipe(Layer.provideMerge(embeddedLog(dir)))
            const writer = yield* writerOn(dir, gated)
            const { batchId } = yield* writer.create(batchOf(2))
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
            ).pipe(Layer.provideMerge(embeddedLog(dir)))
            const writer = yield* writerOn(dir, delaying)
            const { batchId } = yield* writer.create(batchOf(3))
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
            ).pipe(Layer.provideMerge(embeddedLog(dir)))
            const writer = yield* writerOn(dir, racing)
            const { batchId } = yield* writer.create(batchOf(3))
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

/**
 * Two writers on one log, as two instances decide a batch each on its own view: one runs the batch's
 * lane, the other its lifecycle commands. Their endings are claimed in one store that keeps the first,
 * as the NATS bucket does; `gate` holds a writer's claims until it is opened.
 */
const twoWriters = (dir: string, arbitrated: boolean) =>
  Effect.gen(function* () {
    const claimed = new Map<string, Ending>()
    const gates = new Map<string, Deferred.Deferred<void>>()
    const storeFor = (writer: string) =>
      Layer.succeed(
        FateStore.FateStore,
        FateStore.FateStore.of({
          claim: (batchId, ending) =>
            Effect.zipRight(
              gates.has(writer) ? Deferred.await(gates.get(writer)!) : Effect.void,
              Effect.sync(() => {
                if (!arbitrated) return ending
                if (!claimed.has(batchId)) claimed.set(batchId, ending)
                return claimed.get(batchId)!
              }),
            ),
          forget: () => Effect.void,
        }),
      )
    const shared = yield* Layer.build(
      Projector.Live.pipe(
        Layer.provideMerge(ReadModel.layer(join(dir, "read.sqlite"))),
        Layer.provideMerge(embeddedLog(dir)),
        Layer.provideMerge(Metrics.live),
        Layer.provide(InstanceId.layer("test")),
      ),
    )
    const writer = (name: string) =>
      Effect.map(Layer.build(BatchWriter.Live.pipe(Layer.provide(storeFor(name)))).pipe(Effect.provide(shared)), (context) =>
        Context.get(context, BatchWriter.BatchWriter),
      )
    const endings = (batchId: string) =>
      Effect.map(
        Stream.runCollect(Context.get(shared, EventLog).read(`batch.${batchId}.>`, 1)),
        (messages) =>
          [...messages]
            .map((m) => JSON.parse(new TextDecoder().decode(m.data)) as { type: string })
            .map((e) => e.type)
            .filter((type) => /^batch_(cancell|fail|expir|complet)/.test(type)),
      )
    const gate = (name: string) => Effect.tap(Deferred.make<void>(), (d) => Effect.sync(() => gates.set(name, d)))
    return { lanes: yield* writer("lanes"), lifecycle: yield* writer("lifecycle"), endings, gate }
  })

describe("two writers ending one batch", () => {
  const run = <A>(arbitrated: boolean, body: (w: Effect.Effect.Success<ReturnType<typeof twoWriters>>) => Effect.Effect<A, unknown>) => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-writer-"))
    return Effect.runPromise(Effect.scoped(Effect.flatMap(twoWriters(dir, arbitrated), body))).finally(() =>
      rmSync(dir, { recursive: true, force: true }),
    )
  }

  // The window closes while row 1 runs; the lane's writer, not yet knowing, settles it last.
  const closedThenCompleted = (arbitrated: boolean) =>
    run(arbitrated, ({ lanes, lifecycle, endings }) =>
        Effect.gen(function* () {
        const { batchId } = yield* lanes.create(batchOf(2))
        for (const row of [0, 1]) yield* lanes.executeRow(batchId, { type: "StartRow", row, at: 1 }, lane)
        yield* lanes.executeRow(batchId, completed(0, 2), lane)
        const expiring = yield* lifecycle.execute(batchId, { type: "Expire", at: 3 })
        expect(expiring.events.map((e) => e.type)).toEqual(["batch_expiring"])
        yield* lanes.executeRow(batchId, completed(1, 4), lane)
        // Every row has settled: the Dispatcher's reconciliation writes the final event the log lacks.
        yield* lifecycle.execute(batchId, { type: "Reconcile", at: 5 })
        return yield* endings(batchId)
      }),
    )

  it("a closing claimed first: the lane's writer, finding it, leaves its completion out, and the batch ends as closed", async () => {
    expect(await closedThenCompleted(true)).toEqual(["batch_expiring", "batch_expired"])
  })

  it("(the same without arbitration writes two endings: what the claims prevent)", async () => {
    expect(await closedThenCompleted(false)).toEqual(["batch_expiring", "batch_completed", "batch_expired"])
  })

  // The lifecycle writer read the batch with row 1 running; the lane's writer completes the batch before
  // the closing decided on that read is claimed.
  const completedThenClosed = (arbitrated: boolean) =>
    run(arbitrated, ({ lanes, lifecycle, endings, gate }) =>
        Effect.gen(function* () {
        const { batchId } = yield* lanes.create(batchOf(2))
        for (const row of [0, 1]) yield* lanes.executeRow(batchId, { type: "StartRow", row, at: 1 }, lane)
        yield* lanes.executeRow(batchId, completed(0, 2), lane)
        const held = yield* gate("lifecycle")
        const expire = yield* Effect.fork(lifecycle.execute(batchId, { type: "Expire", at: 3 }))
        yield* Effect.sleep("100 millis")
        yield* lanes.executeRow(batchId, completed(1, 4), lane)
        yield* Deferred.succeed(held, undefined)
        yield* Fiber.join(expire)
        return yield* endings(batchId)
      }),
    )

  it("a completion claimed first: the closing decided on an older view is decided again, and the batch ends completed", async () => {
    expect(await completedThenClosed(true)).toEqual(["batch_completed"])
  })

  it("(the same without arbitration writes a closing after the completion)", async () => {
    expect(await completedThenClosed(false)).toEqual(["batch_completed", "batch_expiring"])
  })
})
