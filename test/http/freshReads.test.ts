import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { Effect, Option, type Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { batchSubject, laneSubject } from "../../src/domain/batch/subjects.js"
import { withChunking } from "../../src/eventlog/chunking.js"
import { type EventLogShape, LogUnavailable } from "../../src/eventlog/EventLog.js"
import * as JetStreamEventLog from "../../src/eventlog/JetStreamEventLog.js"
import * as SqliteEventLog from "../../src/eventlog/SqliteEventLog.js"
import { freshReads } from "../../src/http/freshReads.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"

const dir = mkdtempSync(join(tmpdir(), "sluice-fresh-reads-"))
let nats: NatsServer | undefined

beforeAll(async () => {
  nats = await startNatsServer()
})
afterAll(async () => {
  await nats?.stop()
  rmSync(dir, { recursive: true, force: true })
})

const jetStream = (): Effect.Effect<EventLogShape, LogUnavailable, Scope.Scope> =>
  Effect.gen(function* () {
    const stream = "FRESH"
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        const nc = await connect({ servers: nats!.url })
        await (await jetstreamManager(nc)).streams.delete(stream).catch(() => false)
        await nc.close()
      }),
    )
    return withChunking(yield* JetStreamEventLog.makeRaw({ url: nats!.url, stream }))
  })
let files = 0
const sqlite = () => Effect.map(SqliteEventLog.makeRaw({ path: join(dir, `log-${++files}.db`) }), withChunking)

const event = (text: string) => new TextEncoder().encode(JSON.stringify({ note: text }))

/** The seq a fresh read waits for the projections to reach, as freshReads asks it of the projector. */
const awaited = (log: EventLogShape) =>
  Effect.gen(function* () {
    const asked: Array<number> = []
    const read = yield* freshReads(log, { awaitSeq: (seq) => Effect.sync(() => void asked.push(seq)) }, "2 seconds")
    expect(Option.isSome(read)).toBe(true)
    return asked
  })

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Effect.runPromise(Effect.scoped(effect))

describe("a fresh read with several instances on the log", () => {
  it("waits for the last message a call wrote on NATS, not for the lane windows the models' owners appended after it", () =>
    run(
      Effect.gen(function* () {
        const log = yield* jetStream()
        const append = (subjects: ReadonlyArray<string>) => log.append(subjects.map((subject) => ({ subject, data: event(subject) })))
        expect(yield* awaited(log)).toEqual([0])
        // A create: its bodies, then the event that commits them.
        const [, created] = yield* append([batchSubject("batch_a", "row_bodies"), batchSubject("batch_a", "batch_created")])
        expect(yield* awaited(log)).toEqual([created!.seq])
        // The run: windows on the batch's lanes for two models, and a response's.
        const windows = yield* append([laneSubject("batch_a", "m1"), laneSubject("batch_a", "m2"), laneSubject("resp_b", "m1"), laneSubject("batch_a", "m1")])
        expect(windows.at(-1)!.seq).toBeGreaterThan(created!.seq)
        expect(yield* awaited(log)).toEqual([created!.seq])
        // A cancel through another instance, then more windows: the cancel is waited for.
        const [cancelling] = yield* append([batchSubject("batch_a", "batch_cancelling")])
        yield* append([laneSubject("batch_a", "m1"), laneSubject("batch_a", "m2")])
        expect(yield* awaited(log)).toEqual([cancelling!.seq])
        // Any aggregate's call: an account's change, a file's upload.
        const [account] = yield* append(["account.acct_1.account_updated"])
        yield* append([laneSubject("batch_a", "m1")])
        expect(yield* awaited(log)).toEqual([account!.seq])
        const [, file] = yield* append(["file.file_1.part", "file.file_1.file_created", laneSubject("batch_a", "m2")])
        expect(yield* awaited(log)).toEqual([file!.seq])
      }),
    ))

  it("waits for the log's head, as before, when the log refuses the lookup (a NATS cluster just healed may, while it answers for its head)", () =>
    run(
      Effect.gen(function* () {
        const log = yield* jetStream()
        yield* log.append([batchSubject("batch_a", "batch_created"), laneSubject("batch_a", "m1"), laneSubject("batch_a", "m2")].map((subject) => ({ subject, data: event(subject) })))
        const refusing: EventLogShape = { ...log, lastSeqMatching: () => Effect.fail(new LogUnavailable({ message: "JetStream system temporarily unavailable" })) }
        expect(yield* awaited(refusing)).toEqual([yield* log.lastSeq])
        expect(yield* awaited(log)).toEqual([1])
      }),
    ))

  it("waits for the embedded log's head, which no other process writes", () =>
    run(
      Effect.gen(function* () {
        const log = yield* sqlite()
        const stored = yield* log.append([batchSubject("batch_a", "batch_created"), laneSubject("batch_a", "m1")].map((subject) => ({ subject, data: event(subject) })))
        expect(yield* awaited(log)).toEqual([stored[1]!.seq])
      }),
    ))
})
