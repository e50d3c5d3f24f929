import { Context, Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import * as BatchWriter from "../src/actors/BatchWriter.js"
import { isLaneSubject, oneBatch } from "../src/domain/batch/subjects.js"
import { type AppendInput, AppendOutcomeUnknown, EventLog } from "../src/eventlog/EventLog.js"
import * as SqliteEventLog from "../src/eventlog/SqliteEventLog.js"
import { writerStack } from "./support/writerStack.js"
import { Stream } from "effect"

const lane = { model: "m", owner: "test", revision: 1, valid: () => true, validThrough: () => Number.POSITIVE_INFINITY }
const batchOf = (n: number) => ({
  accountId: "acc",
  keyId: "key",
  completionWindowMs: 86_400_000,
  metadata: null,
  requests: Array.from({ length: n }, (_, i) => ({ custom_id: `r${i}`, model: "m", body: {} })),
})

/**
 * The writer over an embedded log whose next lane window's append answers AppendOutcomeUnknown, having
 * stored the window (`stores`) or not: an ack lost on the way back, or a publish a cut-off leader took
 * and the majority never stored. Every append's lane windows are recorded.
 */
const writerOverUnsureLog = (dir: string, stores: boolean) =>
  Effect.gen(function* () {
    const state = { loseNext: false, windows: [] as Array<AppendInput> }
    const unsure = Layer.effect(
      EventLog,
      Effect.map(EventLog, (inner) => ({
        ...inner,
        append: (inputs: ReadonlyArray<AppendInput>) =>
          Effect.suspend(() => {
            state.windows.push(...inputs.filter((m) => isLaneSubject(m.subject)))
            if (!state.loseNext || !inputs.some((m) => isLaneSubject(m.subject))) return inner.append(inputs)
            state.loseNext = false
            const lost = Effect.fail(new AppendOutcomeUnknown({ message: "publish failed, stored or not: timeout" }))
            return stores ? Effect.zipRight(inner.append(inputs), lost) : lost
          }),
      })),
    ).pipe(Layer.provideMerge(SqliteEventLog.layer({ path: join(dir, "log.sqlite") })))
    const context = yield* writerStack(dir, unsure)
    return { writer: Context.get(context, BatchWriter.BatchWriter), log: Context.get(context, EventLog), state }
  })

describe("a lane window whose append's outcome is unknown", () => {
  const dirs: Array<string> = []
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })))

  for (const stores of [false, true]) {
    it(`is sent again as it was, before anything is decided on its batch (the log ${stores ? "had" : "had not"} stored it)`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "sluice-unsure-"))
      dirs.push(dir)
      await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const { writer, log, state } = yield* writerOverUnsureLog(dir, stores)
            const { batchId } = yield* writer.create(batchOf(3))
            yield* writer.executeRow(batchId, { type: "StartRow", row: 0, at: 1 }, lane)

            state.loseNext = true
            const unknown = yield* Effect.either(writer.executeRow(batchId, { type: "StartRow", row: 1, at: 2 }, lane))
            expect(unknown._tag).toBe("Left")
            const lost = state.windows[state.windows.length - 1]!
            state.windows.length = 0

            // The start decided again, as a model actor does after a failed append: nothing new to write.
            const again = yield* writer.executeRow(batchId, { type: "StartRow", row: 1, at: 3 }, lane)
            expect(again.events).toEqual([])
            const next = yield* writer.executeRow(batchId, { type: "StartRow", row: 2, at: 4 }, lane)
            expect(next.events.map((e) => e.type)).toEqual(["row_started"])

            // The unsure window went out again first, the same message on the same place.
            expect(state.windows[0]).toMatchObject({ msgId: lost.msgId, expectLastSubjectSeq: lost.expectLastSubjectSeq, data: lost.data })
            const stored = yield* Stream.runCollect(log.read(oneBatch(batchId), 1))
            const laneIds = [...stored].filter((m) => isLaneSubject(m.subject)).map((m) => m.headers?.["ce-id"])
            expect(laneIds.filter((id) => id === lost.msgId)).toHaveLength(1)
            writer.invalidate(batchId)
            for (const row of [0, 1, 2]) expect((yield* writer.rowPhase(batchId, row))?.status).toBe("running")
          }),
        ),
      )
    })
  }
})
