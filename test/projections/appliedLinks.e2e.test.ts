import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { Context, Effect, Layer, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as BatchWriter from "../../src/actors/BatchWriter.js"
import { isLaneSubject } from "../../src/domain/batch/subjects.js"
import { EventLog } from "../../src/eventlog/EventLog.js"
import * as JetStreamEventLog from "../../src/eventlog/JetStreamEventLog.js"
import * as Projector from "../../src/projections/Projector.js"
import { ReadModel } from "../../src/projections/ReadModel.js"
import { readModelDigest, rebuildReadModel } from "../../src/projections/rebuild.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"
import { waitFor } from "../support/waitFor.js"
import { writerStack } from "../support/writerStack.js"

const lane = { model: "m", owner: "test", revision: 1, valid: () => true, validThrough: () => Number.POSITIVE_INFINITY }
const batchOf = (n: number) => ({
  accountId: "acc",
  keyId: "key",
  completionWindowMs: 86_400_000,
  metadata: null,
  requests: Array.from({ length: n }, (_, i) => ({ custom_id: `r${i}`, model: "m", body: {} })),
})

/*
 * A read model that applied a message the stream no longer holds at its place (a cut-off leader's,
 * which the majority replaced) notices and rebuilds from the log. Made here by recreating the stream
 * with the same history up to a lane window, and another window in that window's place.
 */
describe("a read model whose applied messages the stream no longer holds", () => {
  let nats: NatsServer
  let dir: string
  beforeAll(async () => {
    nats = await startNatsServer()
    dir = mkdtempSync(join(tmpdir(), "sluice-apart-"))
  })
  afterAll(async () => {
    await nats?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it("is rebuilt from the log, and reads as the log holds the batch", async () => {
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const logLayer = JetStreamEventLog.layer({ url: nats.url })
          const context = yield* writerStack(dir, logLayer)
          const writer = Context.get(context, BatchWriter.BatchWriter)
          const projector = Context.get(context, Projector.Projector)
          const log = Context.get(context, EventLog)
          const db = Context.get(context, ReadModel)
          const status = (id: string) => (db.prepare(`SELECT status, running FROM batches WHERE id = ?`).get(id) as { status: string; running: number })

          const { batchId } = yield* writer.create(batchOf(2))
          yield* writer.executeRow(batchId, { type: "StartRow", row: 0, at: 1 }, lane)
          const window = yield* writer.executeRow(batchId, { type: "StartRow", row: 1, at: 2 }, lane)
          yield* projector.awaitSeq(window.seq)
          expect(status(batchId).running).toBe(2)

          // The stream as a majority that never stored row 1's window would hold it: the same history
          // before it, and in its place a window that settles row 0 instead.
          const history = [...(yield* Stream.runCollect(log.read(">", 1)))]
          const lastWindow = history.filter((m) => isLaneSubject(m.subject)).at(-1)!
          expect(lastWindow.seq).toBe(window.seq)
          const nc = yield* Effect.promise(() => connect({ servers: nats.url }))
          yield* Effect.promise(async () => {
            await (await jetstreamManager(nc)).streams.delete("SLUICE")
            await nc.close()
          })
          yield* Effect.scoped(
            Effect.gen(function* () {
              const other = Context.get(yield* Layer.build(JetStreamEventLog.layer({ url: nats.url })), EventLog)
              for (const m of history) {
                if (m.seq === lastWindow.seq) break
                yield* other.append([{ subject: m.subject, data: m.data }])
              }
              const instead = JSON.parse(new TextDecoder().decode(lastWindow.data))
              instead.events = [{ type: "row_completed", batch_id: batchId, row: 0, attempt: 1, at: 3, response: { status_code: 200, request_id: "req_0", body: {} }, cost_usd: 0 }]
              const [stored] = yield* other.append([{ subject: lastWindow.subject, data: new TextEncoder().encode(JSON.stringify(instead)) }])
              expect(stored!.seq).toBe(lastWindow.seq)
            }),
          )

          yield* Effect.promise(() =>
            waitFor("the read model to read the batch as the log holds it", () => status(batchId).running === 0 && status(batchId).status === "in_progress", {
              timeoutMs: 30_000,
              everyMs: 100,
            }),
          )
          const rebuilt = yield* rebuildReadModel(log, join(dir, "fresh.sqlite"))
          const fresh = Context.get(yield* Layer.build(ReadModel.layer(join(dir, "fresh.sqlite"))), ReadModel)
          expect(rebuilt.appliedSeq).toBe(lastWindow.seq)
          expect(readModelDigest(db).tables.results).toEqual(readModelDigest(fresh).tables.results)
          expect(readModelDigest(db).tables.batches).toEqual(readModelDigest(fresh).tables.batches)
        }),
      ),
    )
  }, 60_000)
})
