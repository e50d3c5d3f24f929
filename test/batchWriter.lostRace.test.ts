import { Context, Deferred, Effect, Either, Fiber, Layer, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import * as BatchWriter from "../src/actors/BatchWriter.js"
import type { LaneWindow } from "../src/domain/batch/laneWindow.js"
import { batchMsgId, batchSubject, isLaneSubject, oneBatch } from "../src/domain/batch/subjects.js"
import { type AppendInput, EventLog, LogUnavailable, WrongLastSequence } from "../src/eventlog/EventLog.js"
import * as SqliteEventLog from "../src/eventlog/SqliteEventLog.js"
import { writerStack } from "./support/writerStack.js"

const lane = { model: "m", owner: "s2", revision: 1, valid: () => true, validThrough: () => Number.POSITIVE_INFINITY }
const batchOf = (n: number) => ({
  accountId: "acc",
  keyId: "key",
  completionWindowMs: 86_400_000,
  metadata: null,
  requests: Array.from({ length: n }, (_, i) => ({ custom_id: `r${i}`, model: "m", body: {} })),
})

/**
 * The writer over an embedded log whose appends wait, while `hold` says so, until `release` is done: the
 * decisions made meanwhile queue behind the append on its way. `fail`, when set, answers the held append.
 * A lifecycle event already stored is refused as out of place, as nats-server 2.10.27 answers a publish
 * with an expected last subject sequence of 0 whose message id it has stored (the embedded log answers
 * it as a duplicate); the append's other messages are stored, and it fails with the refusal.
 */
const writerOverHeldLog = (dir: string) =>
  Effect.gen(function* () {
    const gate = {
      hold: (_: ReadonlyArray<AppendInput>) => false,
      release: Deferred.unsafeMake<void>(Effect.runSync(Effect.fiberId)),
      reached: Deferred.unsafeMake<void>(Effect.runSync(Effect.fiberId)),
      fail: undefined as LogUnavailable | undefined,
    }
    const held = Layer.effect(
      EventLog,
      Effect.map(EventLog, (inner) => {
        const asTheServer = (inputs: ReadonlyArray<AppendInput>) =>
          Effect.flatMap(
            Effect.forEach(inputs, (m) => (m.expectLastSubjectSeq === 0 ? inner.lastSeqOf(m.subject) : Effect.succeed(0))),
            (last) => {
              const refused = inputs.findIndex((_, i) => last[i]! > 0)
              if (refused < 0) return inner.append(inputs)
              const { subject } = inputs[refused]!
              return Effect.zipRight(
                inner.append(inputs.filter((_, i) => last[i] === 0)),
                Effect.fail(new WrongLastSequence({ subject, expected: 0 })),
              )
            },
          )
        return {
          ...inner,
          append: (inputs: ReadonlyArray<AppendInput>) =>
            Effect.suspend(() => {
              if (!gate.hold(inputs)) return asTheServer(inputs)
              gate.hold = () => false
              Deferred.unsafeDone(gate.reached, Effect.void)
              return Effect.zipRight(Deferred.await(gate.release), gate.fail === undefined ? asTheServer(inputs) : Effect.fail(gate.fail))
            }),
        }
      }),
    ).pipe(Layer.provideMerge(SqliteEventLog.layer({ path: join(dir, "log.sqlite") })))
    const context = yield* writerStack(dir, held, "s2")
    return { writer: Context.get(context, BatchWriter.BatchWriter), log: Context.get(context, EventLog), gate }
  })

/**
 * A writer over a held log (above), and a batch of `n` rows that another instance has started while the
 * writer's view still has it validating: the writer's own `batch_started`, decided with its first start, is held at the gate.
 */
const startedElsewhere = (dir: string, n: number) =>
  Effect.gen(function* () {
    const held = yield* writerOverHeldLog(dir)
    const { writer, log, gate } = held
    const { batchId } = yield* writer.create(batchOf(n))
    const started = { type: "batch_started" as const, batch_id: batchId, at: 1 }
    yield* log.append([
      { subject: batchSubject(batchId, "batch_started"), data: new TextEncoder().encode(JSON.stringify(started)), msgId: batchMsgId(started), expectLastSubjectSeq: 0 },
    ])
    gate.hold = (inputs) => inputs.some((m) => m.subject === batchSubject(batchId, "batch_started"))
    return { ...held, batchId }
  })

/** The rows whose start the log holds, read from its lane windows. */
const startedInLog = (log: Context.Tag.Service<typeof EventLog>, batchId: string) =>
  Effect.map(Stream.runCollect(log.read(oneBatch(batchId), 1)), (messages) =>
    [...messages]
      .filter((m) => isLaneSubject(m.subject))
      .flatMap((m) => (JSON.parse(new TextDecoder().decode(m.data)) as LaneWindow).events)
      .flatMap((e) => (e.type === "row_started" ? [e.row] : []))
      .sort((a, b) => a - b),
  )

/** What a model actor does with a decided start (ModelActor.runRow): once `written` fails, the start is decided again. */
const startAsAnActorDoes = (writer: BatchWriter.BatchWriterShape, batchId: string, decided: BatchWriter.Decided, row: number) =>
  Effect.gen(function* () {
    const first = yield* Effect.either(decided.written)
    if (Either.isRight(first)) return "written" as const
    yield* writer.executeRow(batchId, { type: "StartRow", row, at: 10 }, lane)
    return "decided again" as const
  })

describe("decisions queued behind an append the log refused", () => {
  const dirs: Array<string> = []
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })))
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-lost-race-"))
    dirs.push(dir)
    return dir
  }

  // Partition suite, nats-server 2.10.27: two instances each started their model's first row of a new batch,
  // both deciding batch_started; the second one's was refused as out of place (a publish of the same message id
  // with an expected last subject sequence of 0, once the first is stored, is refused, not answered as its
  // duplicate). The rows that instance decided while its append was on its way were never written, and never run.
  it("are decided again on the log's batch: no start is answered as written that the log does not hold", async () => {
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const { writer, log, gate, batchId } = yield* startedElsewhere(tempDir(), 4)
          const first = yield* writer.decideRow(batchId, { type: "StartRow", row: 0, at: 2 }, lane)
          expect(first.events.map((e) => e.type)).toEqual(["batch_started", "row_started"])
          const behind = yield* Effect.forEach([1, 2, 3], (row) => writer.decideRow(batchId, { type: "StartRow", row, at: 3 }, lane))
          for (const decided of behind) expect(decided.events.map((e) => e.type)).toEqual(["row_started"])
          yield* Deferred.succeed(gate.release, undefined)

          const outcomes = yield* Effect.forEach([first, ...behind], (decided, row) => startAsAnActorDoes(writer, batchId, decided, row), {
            concurrency: "unbounded",
          })
          expect(yield* startedInLog(log, batchId)).toEqual([0, 1, 2, 3])
          expect(outcomes.slice(1)).toEqual(["decided again", "decided again", "decided again"])
          writer.invalidate(batchId)
          for (const row of [0, 1, 2, 3]) expect((yield* writer.rowPhase(batchId, row))?.status).toBe("running")
        }),
      ),
    )
  })

  // The model actor's plain row path (ModelActor.runRow) decides without an effect and waits by callback.
  it("decided without an effect, the same: each is told it was not stored, and written() fails so the start is decided again", async () => {
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const { writer, log, gate, batchId } = yield* startedElsewhere(tempDir(), 3)
          const decided = [0, 1, 2].map((row) => writer.decideRowNow(batchId, { type: "StartRow", row, at: 2 }, lane)!)
          expect(decided.map((d) => d.events.map((e) => e.type))).toEqual([["batch_started", "row_started"], ["row_started"], ["row_started"]])
          const told = decided.map((d) => Effect.async<BatchWriter.Written | undefined>((resume) => d.whenStored((w) => resume(Effect.succeed(w)))))
          yield* Deferred.succeed(gate.release, undefined)
          // The first is refused for its batch_started: its row_started is in the log all the same.
          expect(yield* Effect.all(told)).toEqual([undefined, undefined, undefined])
          // The writer dropped its view of the batch: nothing is decided without an effect until it is read again.
          expect(writer.decideRowNow(batchId, { type: "StartRow", row: 1, at: 3 }, lane)).toBeUndefined()
          for (const d of decided) expect(Either.isLeft(yield* Effect.either(d.written()))).toBe(true)

          // written() read it again: the rows the log does not hold are decided again, without an effect.
          const again = [1, 2].map((row) => writer.decideRowNow(batchId, { type: "StartRow", row, at: 3 }, lane)!)
          for (const d of again) expect(d.events.map((e) => e.type)).toEqual(["row_started"])
          expect(yield* Effect.all(again.map((d) => Effect.async<BatchWriter.Written | undefined>((resume) => d.whenStored((w) => resume(Effect.succeed(w))))))).not.toContain(undefined)
          expect(yield* startedInLog(log, batchId)).toEqual([0, 1, 2])
        }),
      ),
    )
  })

  it("a start decided as nothing on a closing still on its way is decided again when the log does not take the closing", async () => {
    const dir = tempDir()
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const { writer, log, gate } = yield* writerOverHeldLog(dir)
          const { batchId } = yield* writer.create(batchOf(3))
          yield* writer.executeRow(batchId, { type: "StartRow", row: 0, at: 1 }, lane)

          gate.hold = (inputs) => inputs.some((m) => m.subject === batchSubject(batchId, "batch_cancelling"))
          gate.fail = new LogUnavailable({ message: "no responders" })
          const cancel = yield* Effect.fork(writer.execute(batchId, { type: "Cancel", at: 2 }))
          // The start is decided on the view the cancel left, while the cancel's append is on its way.
          yield* Deferred.await(gate.reached)
          const decided = yield* writer.decideRow(batchId, { type: "StartRow", row: 1, at: 3 }, lane)
          expect(decided.events).toEqual([])
          yield* Deferred.succeed(gate.release, undefined)
          expect(Either.isLeft(yield* Effect.either(decided.written))).toBe(true)
          expect(Either.isLeft(yield* Effect.either(Fiber.join(cancel)))).toBe(true)

          const again = yield* writer.executeRow(batchId, { type: "StartRow", row: 1, at: 4 }, lane)
          expect(again.events.map((e) => e.type)).toEqual(["row_started"])
          expect(yield* startedInLog(log, batchId)).toEqual([0, 1])
        }),
      ),
    )
  })
})

