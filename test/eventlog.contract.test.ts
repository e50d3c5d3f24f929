import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { jetstreamManager } from "@nats-io/jetstream"
import { connect, type NatsConnection } from "@nats-io/transport-node"
import { Chunk, Deferred, Effect, Either, Fiber, Schedule, type Scope, Stream } from "effect"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RawEventLog, splitIntoParts, withChunking } from "../src/eventlog/chunking.js"
import { linkHash } from "../src/eventlog/eventHeaders.js"
import { type AppendInput, type EventLogShape, type LogMessage, type LogUnavailable } from "../src/eventlog/EventLog.js"
import * as JetStreamEventLog from "../src/eventlog/JetStreamEventLog.js"
import * as SqliteEventLog from "../src/eventlog/SqliteEventLog.js"
import { matchSubject } from "../src/eventlog/subjects.js"
import { type NatsServer, startNatsServer } from "./support/natsServer.js"

interface Opened {
  readonly log: EventLogShape
  readonly raw: RawEventLog
}

interface Backend {
  readonly name: string
  /** A fresh, empty log; released (and its storage removed) with the scope. */
  readonly open: (maxPayload?: number) => Effect.Effect<Opened, LogUnavailable, Scope.Scope>
}

const tempDir = mkdtempSync(join(tmpdir(), "sluice-eventlog-"))
let nats: NatsServer | undefined
let admin: NatsConnection | undefined
let sqliteFiles = 0

const server = (): NatsServer => {
  if (nats === undefined) throw new Error("nats-server was not started")
  return nats
}

const opened = (raw: RawEventLog): Opened => ({ raw, log: withChunking(raw) })

const sqlite: Backend = {
  name: "sqlite",
  open: (maxPayload) =>
    Effect.map(
      SqliteEventLog.makeRaw({ path: join(tempDir, `log-${++sqliteFiles}.db`), ...(maxPayload ? { maxPayload } : {}) }),
      opened,
    ),
}

// Every test gets an empty stream: the previous one is deleted when its scope closes.
const jetStream: Backend = {
  name: "jetstream",
  open: (maxPayload) =>
    Effect.gen(function* () {
      const stream = "SLUICE"
      yield* Effect.addFinalizer(() =>
        Effect.promise(async () => {
          const jsm = await jetstreamManager(admin!)
          await jsm.streams.delete(stream).catch(() => false)
        }),
      )
      const raw = yield* JetStreamEventLog.makeRaw({ url: server().url, stream, ...(maxPayload ? { maxPayload } : {}) })
      return opened(raw)
    }),
}

beforeAll(async () => {
  nats = await startNatsServer()
  admin = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 250 })
})

afterAll(async () => {
  await admin?.close()
  await nats?.stop()
  rmSync(tempDir, { recursive: true, force: true })
})

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>): Promise<A> => Effect.runPromise(Effect.scoped(effect))

const bytes = (text: string) => new TextEncoder().encode(text)
const text = (data: Uint8Array) => new TextDecoder().decode(data)
const collect = <A, E>(stream: Stream.Stream<A, E>) => Effect.map(Stream.runCollect(stream), Chunk.toReadonlyArray)
const appendTexts = (log: EventLogShape, messages: ReadonlyArray<readonly [string, string]>) =>
  log.append(messages.map(([subject, body]) => ({ subject, data: bytes(body) })))
const summary = (messages: ReadonlyArray<LogMessage>) => messages.map((m) => [m.seq, m.subject, text(m.data)])

/** Collects `count` messages from a follow, signalling once `ready` of them have arrived. */
const followInto = (log: EventLogShape, filter: string, fromSeq: number, count: number, ready: number) =>
  Effect.gen(function* () {
    const caughtUp = yield* Deferred.make<void>()
    let seen = 0
    const fiber = yield* log.follow(filter, fromSeq).pipe(
      Stream.tap(() => (++seen === ready ? Deferred.succeed(caughtUp, undefined) : Effect.void)),
      Stream.take(count),
      collect,
      Effect.fork,
    )
    return { caughtUp: Deferred.await(caughtUp), result: Fiber.join(fiber) }
  })

describe.each([sqlite, jetStream])("EventLog contract: $name", (backend) => {
  it("assigns one global, monotonic seq across subjects", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open()
        expect(yield* log.lastSeq).toBe(0)
        expect(yield* collect(log.read(">", 1))).toEqual([])
        const first = yield* appendTexts(log, [["batch.a.created", "1"], ["account.x.credited", "2"]])
        const second = yield* appendTexts(log, [["batch.b.created", "3"]])
        const third = yield* appendTexts(log, [["batch.a.completed", "4"], ["batch.a.completed", "5"]])
        expect([...first, ...second, ...third]).toEqual([1, 2, 3, 4, 5].map((seq) => ({ seq, duplicate: false })))
        expect(yield* log.lastSeq).toBe(5)
        expect(summary(yield* collect(log.read(">", 1)))).toEqual([
          [1, "batch.a.created", "1"],
          [2, "account.x.credited", "2"],
          [3, "batch.b.created", "3"],
          [4, "batch.a.completed", "4"],
          [5, "batch.a.completed", "5"],
        ])
      }),
    ))

  it("filters subjects with NATS wildcards", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open()
        yield* appendTexts(log, [
          ["batch.a.created", "1"],
          ["batch.a.completed", "2"],
          ["account.x.credited", "3"],
          ["batch.b.completed", "4"],
          ["batch.ab.created", "5"],
          ["batch.a.item.completed", "6"],
        ])
        const seqs = (filter: string) => Effect.map(collect(log.read(filter, 1)), (ms) => ms.map((m) => m.seq))
        expect(yield* seqs("batch.>")).toEqual([1, 2, 4, 5, 6])
        expect(yield* seqs("batch.a.>")).toEqual([1, 2, 6])
        expect(yield* seqs("batch.*.completed")).toEqual([2, 4])
        expect(yield* seqs("batch.a.completed")).toEqual([2])
        expect(yield* seqs("account.>")).toEqual([3])
        expect(yield* seqs("batch.zzz.>")).toEqual([])
      }),
    ))

  it("may leave the data of the subjects a reader skips behind, and still delivers every message in order", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open(8192)
        const large = (c: string) => c.repeat(5000)
        const stored: ReadonlyArray<readonly [string, string]> = [
          // In three parts, each of them left behind, or none.
          ["batch.a.row_bodies", "a".repeat(20_000)],
          ["batch.a.rows_added", "1"],
          // Near misses of the filter keep their data: one token more, a different case, "_" as itself.
          ["batch.a.x.row_bodies", large("x")],
          ["batch.a.ROW_BODIES", large("y")],
          ["batch.a.rowXbodies", large("z")],
          ["account.x.row_bodies", large("w")],
          ["batch.b.row_bodies", large("b")],
          ["batch.b.created", "7"],
          // A small one may keep its data: the embedded log copies it rather than test its subject.
          ["batch.c.row_bodies", "8"],
        ]
        yield* appendTexts(log, stored)
        const options = { withoutDataOn: "batch.*.row_bodies" }
        const leftBehind = (subject: string) =>
          backend === sqlite && (subject === "batch.a.row_bodies" || subject === "batch.b.row_bodies")
        const check = (messages: ReadonlyArray<LogMessage>) => {
          expect(messages.map((m) => m.subject)).toEqual(stored.map(([subject]) => subject))
          for (const [i, m] of messages.entries()) {
            // The embedded log leaves them behind; JetStream delivers what it has.
            const expected = leftBehind(m.subject) ? "" : stored[i]![1]
            expect([m.subject, text(m.data)]).toEqual([m.subject, expected])
          }
        }
        check(yield* collect(log.read(">", 1, options)))
        check(yield* collect(log.follow(">", 1, options).pipe(Stream.take(stored.length))))
        expect(summary(yield* collect(log.read("batch.b.>", 1, options))).map(([, subject, data]) => [subject, data])).toEqual([
          ["batch.b.row_bodies", leftBehind("batch.b.row_bodies") ? "" : large("b")],
          ["batch.b.created", "7"],
        ])
      }),
    ))

  it("keeps what was appended when the caller writes over its buffers once the append has succeeded", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open(64)
        const buffer = Buffer.from("a".repeat(100) + "b".repeat(10))
        yield* log.append([
          { subject: "batch.a.large", data: buffer.subarray(0, 100) },
          { subject: "batch.a.small", data: buffer.subarray(100) },
        ])
        buffer.fill("x")
        expect(summary(yield* collect(log.read("batch.a.>", 1))).map(([, subject, data]) => [subject, data])).toEqual([
          ["batch.a.large", "a".repeat(100)],
          ["batch.a.small", "b".repeat(10)],
        ])
      }),
    ))

  it("stores a message id once and reports the first seq for duplicates", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open()
        const [first] = yield* log.append([{ subject: "batch.a.created", data: bytes("x"), msgId: "m1" }])
        yield* appendTexts(log, [["batch.a.other", "y"]])
        const again = yield* log.append([
          { subject: "batch.a.created", data: bytes("x"), msgId: "m1" },
          { subject: "batch.a.created", data: bytes("z"), msgId: "m2" },
          { subject: "batch.a.created", data: bytes("z"), msgId: "m2" },
        ])
        expect(first).toEqual({ seq: 1, duplicate: false })
        expect(again).toEqual([
          { seq: 1, duplicate: true },
          { seq: 3, duplicate: false },
          { seq: 3, duplicate: true },
        ])
        expect(summary(yield* collect(log.read(">", 1)))).toEqual([
          [1, "batch.a.created", "x"],
          [2, "batch.a.other", "y"],
          [3, "batch.a.created", "z"],
        ])
      }),
    ))

  it("checks the expected last seq of the exact subject", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open()
        const subject = "batch.a.events"
        const [first] = yield* log.append([{ subject, data: bytes("1"), expectLastSubjectSeq: 0 }])
        yield* appendTexts(log, [["batch.a.events.sub", "other"], ["batch.b.events", "other"]])
        const [second] = yield* log.append([{ subject, data: bytes("2"), expectLastSubjectSeq: first!.seq }])
        expect(second).toEqual({ seq: 4, duplicate: false })

        const stale = yield* Effect.flip(log.append([{ subject, data: bytes("3"), expectLastSubjectSeq: first!.seq }]))
        expect(stale).toMatchObject({ _tag: "WrongLastSequence", subject, expected: 1 })
        const notEmpty = yield* Effect.flip(log.append([{ subject, data: bytes("4"), expectLastSubjectSeq: 0 }]))
        expect(notEmpty._tag).toBe("WrongLastSequence")
        expect(summary(yield* collect(log.read(subject, 1)))).toEqual([
          [1, subject, "1"],
          [4, subject, "2"],
        ])
      }),
    ))

  it("knows the last seq stored on exactly one subject, which is what an append to it must expect", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open(64)
        const lane = "batch.a.lane.m1"
        expect(yield* log.lastSeqOf(lane)).toBe(0)
        yield* appendTexts(log, [[lane, "1"], ["batch.a.lane.m1.x", "2"], ["batch.a.lane.m10", "3"], ["batch.b.lane.m1", "4"]])
        expect(yield* log.lastSeqOf(lane)).toBe(1)
        expect(yield* log.lastSeqOf("batch.a.lane.m1.x")).toBe(2)
        expect(yield* log.lastSeqOf("batch.a.lane")).toBe(0)
        // In parts: the last part's seq, as its append reports.
        const [large] = yield* log.append([{ subject: lane, data: bytes("z".repeat(200)), msgId: "w1", expectLastSubjectSeq: 1 }])
        expect(large!.firstSeq).toBe(5)
        expect(yield* log.lastSeqOf(lane)).toBe(large!.seq)
        const [again] = yield* log.append([{ subject: lane, data: bytes("z".repeat(200)), msgId: "w1" }])
        expect(again!.duplicate).toBe(true)
        expect(yield* log.lastSeqOf(lane)).toBe(large!.seq)
        yield* appendTexts(log, [["batch.a.created", "5"]])
        const expected = yield* log.lastSeqOf(lane)
        const [next] = yield* log.append([{ subject: lane, data: bytes("6"), expectLastSubjectSeq: expected }])
        expect(yield* log.lastSeqOf(lane)).toBe(next!.seq)
        expect(yield* log.lastSeqOf("batch.b.lane.m1")).toBe(4)
        yield* log.purge("batch.b.>")
        expect(yield* log.lastSeqOf("batch.b.lane.m1")).toBe(0)
        expect(yield* log.lastSeqOf(lane)).toBe(next!.seq)
      }),
    ))

  it("knows a seq at or after the last message a filter matches: on NATS that message's own (a message in parts, its last part's), on the embedded log its head", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open(64)
        const subjects = ["batch.a.batch_created", "batch.a.lane.m1", "batch.b.row_bodies", "file.f.part", "response.r.lane.m2", "idempotency.k"]
        const filters = ["*.*.*", "batch.*.*", "*.*.lane.*", "batch.a.>", "file.*.*", "stream.*.*", "idempotency.*"]
        const stored: Array<{ readonly subject: string; readonly seq: number }> = []
        expect(yield* log.lastSeqMatching("*.*.*")).toBe(0)
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              fc.array(fc.record({ subject: fc.constantFrom(...subjects), large: fc.boolean() }), { minLength: 1, maxLength: 6 }),
              (appends) =>
                Effect.runPromise(
                  Effect.gen(function* () {
                    // A large one is stored in parts: maxPayload is 64 bytes.
                    const results = yield* log.append(appends.map(({ subject, large }) => ({ subject, data: bytes(large ? "z".repeat(200) : "{}") })))
                    appends.forEach(({ subject }, i) => stored.push({ subject, seq: results[i]!.seq }))
                    const head = yield* log.lastSeq
                    for (const filter of filters) {
                      const last = Math.max(0, ...stored.filter((m) => matchSubject(filter, m.subject)).map((m) => m.seq))
                      expect(yield* log.lastSeqMatching(filter), filter).toBe(backend.name === "jetstream" ? last : head)
                    }
                  }),
                ),
            ),
            { numRuns: 25 },
          ),
        )
      }),
    ))

  it("reads from a seq in the middle", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open()
        yield* appendTexts(log, Array.from({ length: 10 }, (_, i) => [`batch.x${i % 3}.e`, `${i + 1}`] as const))
        const messages = yield* collect(log.read("batch.>", 6))
        expect(messages.map((m) => m.seq)).toEqual([6, 7, 8, 9, 10])
        expect(messages.map((m) => text(m.data))).toEqual(["6", "7", "8", "9", "10"])
        expect(yield* collect(log.read("batch.>", 11))).toEqual([])
      }),
    ))

  it("reads from a seq between two messages of one subject: exactly the later ones, and the read ends", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open()
        const lane = "batch.a.lane.m1"
        // The lane at seqs 1, 3, 6, 8, 9; other subjects, some under the same batch, between them.
        yield* appendTexts(log, [
          [lane, "l1"],
          ["batch.a.created", "c"],
          [lane, "l2"],
          ["batch.b.lane.m1", "b1"],
          ["batch.a.lane.m2", "m2"],
          [lane, "l3"],
          ["account.x.credited", "x"],
          [lane, "l4"],
          [lane, "l5"],
          ["batch.b.lane.m1", "b2"],
        ])
        const read = (filter: string, fromSeq: number) =>
          Effect.map(
            collect(log.read(filter, fromSeq)).pipe(
              Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => `read ${filter} from ${fromSeq} did not end` }),
            ),
            (ms) => ms.map((m) => [m.seq, text(m.data)]),
          )
        expect(yield* read(lane, 2)).toEqual([[3, "l2"], [6, "l3"], [8, "l4"], [9, "l5"]])
        expect(yield* read(lane, 4)).toEqual([[6, "l3"], [8, "l4"], [9, "l5"]])
        expect(yield* read(lane, 7)).toEqual([[8, "l4"], [9, "l5"]])
        expect(yield* read(lane, 9)).toEqual([[9, "l5"]])
        expect(yield* read(lane, 10)).toEqual([])
        expect(yield* read("batch.a.>", 4)).toEqual([[5, "m2"], [6, "l3"], [8, "l4"], [9, "l5"]])
        expect(yield* read("batch.*.lane.m1", 5)).toEqual([[6, "l3"], [8, "l4"], [9, "l5"], [10, "b2"]])
        expect(yield* read("batch.b.>", 5)).toEqual([[10, "b2"]])
        expect(yield* read("batch.zzz.>", 3)).toEqual([])
      }),
    ))

  it("reads mid-subject after many appends: every message from the seq on, once", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open()
        const subjects = ["batch.a.lane.m1", "batch.a.lane.m2", "batch.a.created", "batch.b.lane.m1"]
        const stored = Array.from({ length: 200 }, (_, i) => [subjects[(i * 7) % 5 % 4]!, `${i + 1}`] as const)
        yield* appendTexts(log, stored)
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(fc.constantFrom(...subjects, "batch.a.>", "batch.*.lane.m1"), fc.integer({ min: 1, max: 201 }), (filter, from) =>
              Effect.runPromise(
                Effect.gen(function* () {
                  const got = yield* collect(log.read(filter, from)).pipe(
                    Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => `read ${filter} from ${from} did not end` }),
                  )
                  const expected = stored
                    .map(([subject, body], i) => ({ seq: i + 1, subject, body }))
                    .filter((m) => m.seq >= from && matchSubject(filter, m.subject))
                  expect(got.map((m) => [m.seq, text(m.data)])).toEqual(expected.map((m) => [m.seq, m.body]))
                }),
              ),
            ),
            { numRuns: 40 },
          ),
        )
      }),
    ))

  it("read stops at the last seq at call time", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open()
        yield* appendTexts(log, [["batch.a.e", "1"], ["batch.a.e", "2"]])
        const stream = log.read("batch.a.>", 1)
        const messages = yield* collect(stream.pipe(Stream.tap(() => appendTexts(log, [["batch.a.e", "later"]]))))
        expect(messages.map((m) => m.seq)).toEqual([1, 2])
        expect(yield* log.lastSeq).toBe(4)
      }),
    ))

  it("follow delivers existing messages, then appends made after it started", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open()
        yield* appendTexts(log, [["batch.a.e", "1"], ["account.x.e", "skip"], ["batch.b.e", "2"]])
        const follower = yield* followInto(log, "batch.>", 1, 5, 2)
        yield* follower.caughtUp
        yield* appendTexts(log, [["batch.c.e", "3"], ["account.x.e", "skip"]])
        yield* appendTexts(log, [["batch.d.e", "4"]])
        yield* appendTexts(log, [["batch.e.e", "5"]])
        const messages = yield* follower.result
        expect(summary(messages)).toEqual([
          [1, "batch.a.e", "1"],
          [3, "batch.b.e", "2"],
          [4, "batch.c.e", "3"],
          [6, "batch.d.e", "4"],
          [7, "batch.e.e", "5"],
        ])
      }),
    ))

  // The projections apply each chunk in one transaction: a follow that split its chunks into single
  // messages made them commit once per event (the NATS log ran at a third of its speed).
  it("follow delivers a backlog many messages to a chunk", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open()
        yield* appendTexts(log, Array.from({ length: 500 }, (_, i) => [`batch.b${i % 7}.e`, String(i)] as const))
        const sizes: Array<number> = []
        yield* log.follow(">", 1).pipe(
          Stream.mapChunks((chunk) => {
            sizes.push(chunk.length)
            return chunk
          }),
          Stream.take(500),
          Stream.runDrain,
        )
        expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(500)
        expect(Math.max(...sizes)).toBeGreaterThan(1)
        expect(sizes.length).toBeLessThan(100)
      }),
    ))

  it("leaves a follower behind a purge of other subjects reading every message it had not yet read", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open()
        // More than a consumer pulls at once, so that most are still on the server when the purge comes
        // (nats-server 2.9.10 moved every consumer past the purge's last message: #3838).
        const kept = Array.from({ length: 300 }, (_, i) => [`batch.a.e${i}`, String(i)] as const)
        yield* appendTexts(log, kept.slice(0, 150))
        yield* appendTexts(log, [["batch.b.created", "gone"]])
        yield* appendTexts(log, kept.slice(150))
        const release = yield* Deferred.make<void>()
        const started = yield* Deferred.make<void>()
        const follower = yield* log.follow(">", 1).pipe(
          Stream.tap((m) => (m.seq === 1 ? Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(release)) : Effect.void)),
          Stream.takeUntil((m) => m.subject === "batch.b.batch_purged"),
          collect,
          Effect.fork,
        )
        yield* Deferred.await(started)
        expect(yield* log.purge("batch.b.>")).toBe(1)
        yield* appendTexts(log, [["batch.b.batch_purged", "tombstone"]])
        yield* Deferred.succeed(release, undefined)
        const read = yield* Fiber.join(follower).pipe(Effect.timeout("20 seconds"))
        // The purged message itself may have been read before the purge (the embedded log reads ahead).
        expect(read.map((m) => text(m.data)).filter((body) => body !== "gone")).toEqual([...kept.map(([, body]) => body), "tombstone"])
      }),
    ))

  it("purges only the messages matching the filter", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open()
        yield* appendTexts(log, [
          ["batch.a.created", "1"],
          ["batch.b.created", "2"],
          ["batch.a.completed", "3"],
          ["account.a.credited", "4"],
        ])
        expect(yield* log.purge("batch.a.>")).toBe(2)
        expect(summary(yield* collect(log.read(">", 1)))).toEqual([
          [2, "batch.b.created", "2"],
          [4, "account.a.credited", "4"],
        ])
        expect(yield* log.purge("batch.zzz.>")).toBe(0)
        const [next] = yield* appendTexts(log, [["batch.a.created", "5"]])
        expect(next!.seq).toBe(5)
      }),
    ))

  it("round-trips a 20 MiB message byte for byte, storing parts no larger than maxPayload", () =>
    run(
      Effect.gen(function* () {
        const { log, raw } = yield* backend.open()
        const data = new Uint8Array(randomBytes(20 * 1024 * 1024 + 123))
        yield* appendTexts(log, [["batch.big.before", "small"]])
        const [result] = yield* log.append([{ subject: "batch.big.payload", data, msgId: "big" }])
        yield* appendTexts(log, [["batch.big.after", "small"]])

        const stored = yield* collect(raw.read("batch.big.payload", 1))
        const parts = Math.ceil(data.length / log.maxPayload)
        expect(parts).toBeGreaterThan(20)
        expect(stored.map((m) => m.data.length).reduce((a, b) => a + b, 0)).toBe(data.length)
        expect(stored.length).toBe(parts)
        expect(Math.max(...stored.map((m) => m.data.length))).toBeLessThanOrEqual(log.maxPayload)
        expect(result).toEqual({ seq: stored[stored.length - 1]!.seq, duplicate: false, firstSeq: stored[0]!.seq })

        const messages = yield* collect(log.read("batch.big.>", 1))
        expect(messages.map((m) => m.subject)).toEqual(["batch.big.before", "batch.big.payload", "batch.big.after"])
        const big = messages[1]!
        expect(big.seq).toBe(result!.seq)
        expect(Buffer.compare(Buffer.from(big.data), Buffer.from(data))).toBe(0)

        const [again] = yield* log.append([{ subject: "batch.big.payload", data, msgId: "big" }])
        expect(again).toEqual({ seq: result!.seq, duplicate: true, firstSeq: stored[0]!.seq })
      }),
    ))

  it("reassembles interleaved parts by chunk id and skips orphans", () =>
    run(
      Effect.gen(function* () {
        const maxPayload = 100
        const { log, raw } = yield* backend.open(maxPayload)
        const payload = (seed: number, size: number) => Uint8Array.from({ length: size }, (_, i) => (seed * 31 + i) % 251)
        const a: AppendInput = { subject: "batch.a.result", data: payload(1, 350) }
        const b: AppendInput = { subject: "batch.a.result", data: payload(2, 220) }
        const c: AppendInput = { subject: "batch.c.result", data: payload(3, 250) }
        const [pa, pb, pc] = [a, b, c].map((m) => splitIntoParts(m, maxPayload))
        // c loses its first part (as if purged); a and b interleave as two concurrent writers would.
        const order = [pc![1]!, pa![0]!, pb![0]!, pa![1]!, pc![2]!, pb![1]!, pa![2]!, pb![2]!, pa![3]!]
        const outcomes = yield* raw.append(order)
        const seqs = outcomes.map((o) => ("seq" in o ? o.seq : -1))
        expect(seqs).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9])

        const messages = yield* collect(log.read("batch.>", 1))
        expect(messages.map((m) => [m.seq, m.subject])).toEqual([
          [8, "batch.a.result"],
          [9, "batch.a.result"],
        ])
        expect(messages[0]!.data).toEqual(b.data)
        expect(messages[1]!.data).toEqual(a.data)
        // Starting after a's first part: a is an orphan there, b is whole.
        expect((yield* collect(log.read("batch.>", 3))).map((m) => m.seq)).toEqual([8])
      }),
    ))

  it("reads one message by its position, assembled from its parts, on its exact subject only", () =>
    run(
      Effect.gen(function* () {
        const maxPayload = 100
        const { log, raw } = yield* backend.open(maxPayload)
        const payload = (seed: number, size: number) => Uint8Array.from({ length: size }, (_, i) => (seed * 17 + i) % 253)
        yield* log.append([
          { subject: "batch.a.rows_added", data: payload(1, 40) },
          { subject: "batch.b.rows_added", data: payload(2, 60) },
          { subject: "batch.a.rows_added", data: payload(3, 350) },
          { subject: "batch.a.rows_added", data: payload(4, 10) },
        ])
        const read = yield* collect(log.read("batch.a.rows_added", 1))
        expect(read.map((m) => [m.firstSeq ?? m.seq, m.seq])).toEqual([[1, 1], [3, 6], [7, 7]])
        for (const m of read) {
          const got = yield* log.readMessage(m.subject, m.firstSeq ?? m.seq, m.seq)
          expect(got?.seq).toBe(m.seq)
          expect(got?.subject).toBe(m.subject)
          expect(Buffer.from(got!.data)).toEqual(Buffer.from(m.data))
        }
        expect((yield* log.readMessage("batch.a.rows_added", 3, 6))?.data).toEqual(payload(3, 350))
        // Not its subject, not the whole message, or nothing there: no message.
        expect(yield* log.readMessage("batch.b.rows_added", 1, 1)).toBeUndefined()
        expect(yield* log.readMessage("batch.a.rows_added", 4, 6)).toBeUndefined()
        expect(yield* log.readMessage("batch.a.rows_added", 50, 50)).toBeUndefined()

        // Parts interleaved with another writer's parts of the same subject still assemble.
        const a = splitIntoParts({ subject: "batch.c.result", data: payload(5, 250) }, maxPayload)
        const b = splitIntoParts({ subject: "batch.c.result", data: payload(6, 150) }, maxPayload)
        const outcomes = yield* raw.append([a[0]!, b[0]!, a[1]!, b[1]!, a[2]!])
        const seqs = outcomes.map((o) => ("seq" in o ? o.seq : -1))
        expect((yield* log.readMessage("batch.c.result", seqs[0]!, seqs[4]!))?.data).toEqual(payload(5, 250))
        expect((yield* log.readMessage("batch.c.result", seqs[1]!, seqs[3]!))?.data).toEqual(payload(6, 150))

        yield* log.purge("batch.a.>")
        expect(yield* log.readMessage("batch.a.rows_added", 7, 7)).toBeUndefined()
        expect(yield* log.readMessage("batch.a.rows_added", 3, 6)).toBeUndefined()
      }),
    ))

  it("completes a chunked message whose first attempt stored only some parts when retried with its msgId", () =>
    run(
      Effect.gen(function* () {
        const maxPayload = 100
        const { log, raw } = yield* backend.open(maxPayload)
        const message: AppendInput = { subject: "batch.a.result", data: new Uint8Array(randomBytes(450)), msgId: "r1" }
        const parts = splitIntoParts(message, maxPayload)
        yield* raw.append(parts.slice(0, 2)) // the writer died here
        const [retry] = yield* log.append([message])
        expect(retry).toEqual({ seq: 5, duplicate: false, firstSeq: 1 })
        const messages = yield* collect(log.read(">", 1))
        expect(messages.map((m) => m.seq)).toEqual([5])
        expect(messages[0]!.data).toEqual(message.data)
      }),
    ))

  it("reassembles chunked messages appended concurrently", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open(512)
        const inputs = Array.from({ length: 12 }, (_, i) => ({
          subject: `batch.${i % 2 === 0 ? "even" : "odd"}.result`,
          data: new Uint8Array(randomBytes(1024 + i * 377)),
        }))
        const results = yield* Effect.forEach(inputs, (m) => log.append([m]), { concurrency: "unbounded" })
        const messages = yield* collect(log.read("batch.>", 1))
        expect(messages).toHaveLength(inputs.length)
        for (const [i, input] of inputs.entries()) {
          const found = messages.filter((m) => m.seq === results[i]![0]!.seq)
          expect(found).toHaveLength(1)
          expect(found[0]!.subject).toBe(input.subject)
          expect(Buffer.compare(Buffer.from(found[0]!.data), Buffer.from(input.data))).toBe(0)
        }
      }),
    ))

  it("lands 5,000 concurrent single appends with distinct seqs", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open()
        const count = 5_000
        const results = yield* Effect.forEach(
          Array.from({ length: count }, (_, i) => i),
          (i) => log.append([{ subject: `batch.b${i % 7}.e`, data: bytes(String(i)) }]),
          { concurrency: "unbounded" },
        )
        const seqs = results.map((r) => r[0]!.seq)
        expect(new Set(seqs).size).toBe(count)
        expect(Math.min(...seqs)).toBe(1)
        expect(Math.max(...seqs)).toBe(count)
        const stored = yield* collect(log.read(">", 1))
        expect(stored).toHaveLength(count)
        const bySeq = new Map(stored.map((m) => [m.seq, text(m.data)]))
        results.forEach((r, i) => expect(bySeq.get(r[0]!.seq)).toBe(String(i)))
      }),
    ))

  it("stores headers with a message and gives them back, with the CloudEvents attributes, leaving the payload as it was", () =>
    run(
      Effect.gen(function* () {
        const { log, raw } = yield* backend.open(64)
        const payload = bytes(JSON.stringify({ type: "batch_created", batch_id: "b1" }))
        const big = bytes(JSON.stringify({ type: "row_bodies", batch_id: "b1", pad: "x".repeat(300) }))
        yield* log.append([
          { subject: "batch.b1.batch_created", data: payload, msgId: "b1:batch_created", headers: { "X-Mine": "kept" } },
          { subject: "batch.b1.row_bodies", data: big, msgId: "b1:bodies:0" },
          { subject: "account.a1.account_created", data: bytes(JSON.stringify({ type: "account_created" })) },
        ])
        const [created, bodies, account] = yield* collect(log.read(">", 1))
        expect(text(created!.data)).toBe(text(payload))
        expect(created!.headers).toMatchObject({
          "X-Mine": "kept",
          "ce-specversion": "1.0",
          "ce-id": "b1:batch_created",
          "ce-type": "sluice.batch.batch_created",
          "ce-source": "/sluice",
          "ce-subject": "b1",
          "ce-datacontenttype": "application/json",
        })
        expect(new Date(created!.headers!["ce-time"]!).getTime()).toBeGreaterThan(0)
        // Stored in parts, read whole: every part has the headers, the message shows them once, without the chunk header.
        expect(text(bodies!.data)).toBe(text(big))
        expect(bodies!.headers).toMatchObject({ "ce-type": "sluice.batch.row_bodies", "ce-id": "b1:bodies:0" })
        expect(bodies!.headers!["Sluice-Chunk"]).toBeUndefined()
        const parts = yield* collect(raw.read("batch.b1.row_bodies", 1))
        expect(parts.length).toBeGreaterThan(1)
        for (const part of parts) expect(part.headers?.["Sluice-Sha256"]).toBe(bodies!.headers!["Sluice-Sha256"])
        expect(account!.headers).toMatchObject({ "ce-type": "sluice.account.account_created", "ce-subject": "a1" })
        expect(account!.headers!["Sluice-Sha256"]).toBeUndefined()
        const purged = yield* log.readMessage("batch.b1.row_bodies", bodies!.firstSeq!, bodies!.seq)
        expect(purged?.headers).toEqual(bodies!.headers)
      }),
    ))

  it("reads without headers when asked, still joining a message stored in parts", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open(64)
        const big = bytes(JSON.stringify({ type: "row_bodies", batch_id: "b1", pad: "x".repeat(300) }))
        const stored: ReadonlyArray<AppendInput> = [
          { subject: "batch.b1.batch_created", data: bytes(JSON.stringify({ type: "batch_created" })), headers: { "X-Mine": "kept" } },
          { subject: "batch.b1.row_bodies", data: big, msgId: "b1:bodies:0" },
          { subject: "account.a1.account_created", data: bytes(JSON.stringify({ type: "account_created" })) },
        ]
        yield* log.append(stored)
        const options = { withoutHeaders: true }
        const check = (messages: ReadonlyArray<LogMessage>) => {
          expect(messages.map((m) => [m.subject, text(m.data), m.headers])).toEqual(stored.map((m) => [m.subject, text(m.data), undefined]))
          expect(messages[1]!.firstSeq).toBeLessThan(messages[1]!.seq)
        }
        check(yield* collect(log.read(">", 1, options)))
        check(yield* collect(log.follow(">", 1, options).pipe(Stream.take(stored.length))))
        // Without the option every message has its headers, as the test above checks in full.
        for (const m of yield* collect(log.read(">", 1))) expect(m.headers?.["ce-type"]).toBeDefined()
      }),
    ))

  it("chains each batch subject's messages: each carries its link and the previous one's, across appends, parts and a reopened log", () =>
    run(
      Effect.gen(function* () {
        const { log, raw } = yield* backend.open(64)
        const event = (n: number, pad = 0) => bytes(JSON.stringify({ type: "lane_window", n, pad: "y".repeat(pad) }))
        yield* log.append([
          { subject: "batch.c.lane.m", data: event(1) },
          { subject: "batch.c.lane.m", data: event(2, 200) },
          { subject: "batch.c.other", data: event(9) },
        ])
        const [first] = yield* log.append([{ subject: "batch.c.lane.m", data: event(3), expectLastSubjectSeq: yield* log.lastSeqOf("batch.c.lane.m") }])
        // Another process (a new owner) continues the chain from what the log holds.
        const other = withChunking(raw)
        yield* other.append([{ subject: "batch.c.lane.m", data: event(4), expectLastSubjectSeq: first!.seq }])
        yield* other.append([{ subject: "batch.c.lane.m", data: event(5) }])
        const stored = (yield* collect(log.read("batch.c.lane.m", 1))) as Array<LogMessage>
        expect(stored.map((m) => JSON.parse(text(m.data)).n)).toEqual([1, 2, 3, 4, 5])
        let prev = ""
        for (const m of stored) {
          expect(m.headers?.["Sluice-Prev-Sha256"] ?? "").toBe(prev)
          expect(m.headers?.["Sluice-Sha256"]).toBe(linkHash(prev, m.subject, m.data))
          prev = m.headers!["Sluice-Sha256"]!
        }
        const [lone] = yield* collect(log.read("batch.c.other", 1))
        expect(lone!.headers?.["Sluice-Prev-Sha256"]).toBeUndefined()
        expect(lone!.headers?.["Sluice-Sha256"]).toBe(linkHash("", "batch.c.other", lone!.data))
      }),
    ))

  it("with the bench-only switch off, writes the CloudEvents headers and no chain link", () =>
    run(
      Effect.gen(function* () {
        const { raw } = yield* backend.open(64)
        const unchained = withChunking(raw, { chain: false })
        yield* unchained.append([{ subject: "batch.u.lane.m", data: bytes(JSON.stringify({ type: "lane_window", pad: "z".repeat(200) })) }])
        yield* unchained.append([{ subject: "batch.u.lane.m", data: bytes(JSON.stringify({ type: "lane_window" })) }])
        const stored = (yield* collect(unchained.read("batch.u.lane.m", 1))) as Array<LogMessage>
        expect(stored).toHaveLength(2)
        for (const m of stored) {
          expect(m.headers?.["ce-type"]).toBe("sluice.batch.lane_window")
          expect(m.headers?.["Sluice-Sha256"]).toBeUndefined()
          expect(m.headers?.["Sluice-Prev-Sha256"]).toBeUndefined()
        }
      }),
    ))
})

describe("EventLog contract: jetstream across a server restart", () => {
  it("follow keeps going without gaps or repeats", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* jetStream.open()
        yield* appendTexts(log, [["batch.r.e", "1"], ["batch.r.e", "2"], ["batch.r.e", "3"]])
        const follower = yield* followInto(log, "batch.>", 1, 6, 3)
        yield* follower.caughtUp
        yield* Effect.promise(() => server().restart())
        // A request written while the client has not yet noticed the restart is lost and only
        // times out (5 s), so wait for the reconnect with short attempts instead.
        const reachable = log.lastSeq.pipe(Effect.timeoutFail({ duration: "500 millis", onTimeout: () => "timeout" }))
        yield* Effect.retry(reachable, Schedule.spaced("50 millis").pipe(Schedule.upTo("20 seconds")))
        yield* appendTexts(log, [["batch.r.e", "4"], ["batch.r.e", "5"]])
        yield* appendTexts(log, [["batch.r.e", "6"]])
        const messages = yield* follower.result
        expect(summary(messages)).toEqual([1, 2, 3, 4, 5, 6].map((n) => [n, "batch.r.e", String(n)]))
      }),
    ))

  it("follow keeps going when the server restarts while messages flow", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* jetStream.open()
        const total = 400
        const follower = yield* followInto(log, "batch.>", 1, total, 100)
        // One append at a time, each retried until stored (its msgId makes a retry of a stored one a no-op).
        const appender = yield* Effect.forEach(
          Array.from({ length: total }, (_, i) => String(i + 1)),
          (n) =>
            log.append([{ subject: "batch.f.e", data: new TextEncoder().encode(n), msgId: `f-${n}` }]).pipe(
              Effect.timeoutFail({ duration: "1 second", onTimeout: () => "timeout" }),
              Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("20 seconds"))),
            ),
          { discard: true },
        ).pipe(Effect.fork)
        yield* follower.caughtUp
        yield* Effect.promise(() => server().restart())
        yield* Fiber.join(appender)
        // Far below the ordered consumer's own recovery (two missed 15 s heartbeats).
        const messages = yield* follower.result.pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => "stalled" }))
        expect(summary(messages)).toEqual(Array.from({ length: total }, (_, i) => [i + 1, "batch.f.e", String(i + 1)]))
      }),
    ))
})

describe("EventLog contract: jetstream with a hung server", () => {
  it("an append whose ack never comes fails as LogUnavailable, and the next one after the server wakes is stored once", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* jetStream.open()
        yield* appendTexts(log, [["batch.h.e", "1"]])
        yield* Effect.promise(() => server().freeze(true))
        const lost = yield* log
          .append([{ subject: "batch.h.e", data: new TextEncoder().encode("2"), msgId: "h-2" }])
          .pipe(Effect.flip, Effect.ensuring(Effect.promise(() => server().freeze(false))))
        expect(lost._tag).toBe("LogUnavailable")
        expect(lost.message).toMatch(/timeout/)
        // The frozen server read the publish once it woke, so it may be stored already: its msgId keeps it once.
        const again = yield* log.append([{ subject: "batch.h.e", data: new TextEncoder().encode("2"), msgId: "h-2" }])
        expect(again[0]!.seq).toBe(2)
        expect(summary(yield* collect(log.read(">", 1)))).toEqual([
          [1, "batch.h.e", "1"],
          [2, "batch.h.e", "2"],
        ])
      }),
    ))
})

describe("EventLog contract: jetstream pull sizes", () => {
  it("follow and read deliver a large message that comes after many small ones, without stalling", () =>
    run(
      Effect.gen(function* () {
        const { log } = yield* jetStream.open()
        const small = Array.from({ length: 300 }, (_, i) => ["batch.s.e", `small ${i}`] as const)
        const follower = yield* followInto(log, "batch.>", 1, 302, 300)
        yield* appendTexts(log, small)
        yield* follower.caughtUp
        const large = "x".repeat(800 * 1024)
        yield* appendTexts(log, [["batch.s.e", large], ["batch.s.e", "after"]])
        // Far below the consumer's recovery from a refused pull (two missed 15 s heartbeats).
        const within = <A, E>(effect: Effect.Effect<A, E>) =>
          effect.pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => "stalled" }))
        const followed = yield* within(follower.result)
        expect(followed.map((m) => text(m.data))).toEqual([...small.map(([, t]) => t), large, "after"])
        const read = yield* within(collect(log.read("batch.>", 1)))
        expect(read.map((m) => text(m.data))).toEqual([...small.map(([, t]) => t), large, "after"])
      }),
    ))
})

describe("SqliteEventLog", () => {
  it("follow sees appends made through another connection to the same file", () =>
    run(
      Effect.gen(function* () {
        const path = join(tempDir, `shared-${++sqliteFiles}.db`)
        const reader = withChunking(yield* SqliteEventLog.makeRaw({ path }))
        const writer = withChunking(yield* SqliteEventLog.makeRaw({ path }))
        yield* appendTexts(reader, [["batch.a.e", "1"]])
        const follower = yield* followInto(reader, "batch.>", 1, 3, 1)
        yield* follower.caughtUp
        // Only polling can see these: the reader's connection gets no in-process notification.
        yield* appendTexts(writer, [["batch.a.e", "2"], ["batch.a.e", "3"]])
        expect(summary(yield* follower.result)).toEqual([
          [1, "batch.a.e", "1"],
          [2, "batch.a.e", "2"],
          [3, "batch.a.e", "3"],
        ])
      }),
    ))
})

describe("EventLog contract: both adapters agree", () => {
  const subjectArb = fc.constantFrom("batch.a.created", "batch.a.completed", "batch.b.created", "account.x.debited")
  const inputArb: fc.Arbitrary<AppendInput> = fc.record(
    {
      subject: subjectArb,
      data: fc.uint8Array({ maxLength: 200 }),
      msgId: fc.constantFrom("m1", "m2", "m3", "m4"),
      expectLastSubjectSeq: fc.nat({ max: 12 }),
    },
    { requiredKeys: ["subject", "data"] },
  )
  const batchesArb = fc.array(fc.array(inputArb, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 6 })

  const replay = (backend: Backend, batches: ReadonlyArray<ReadonlyArray<AppendInput>>) =>
    run(
      Effect.gen(function* () {
        const { log } = yield* backend.open(64)
        const outcomes = []
        for (const batch of batches) {
          const outcome = yield* Effect.either(log.append(batch))
          outcomes.push(Either.isRight(outcome) ? outcome.right : outcome.left._tag)
        }
        // ce-time is the append's time and ce-id of a message without an id a random one: equal nowhere.
        const stored = (yield* collect(log.read(">", 1))).map(({ headers, ...m }) => {
          const { "ce-time": _, "ce-id": __, ...kept } = headers ?? {}
          return { ...m, headers: kept, time: 0, data: [...m.data] }
        })
        return { outcomes, stored }
      }),
    )

  it("stores and replays the same sequence of subjects and payloads", () =>
    fc.assert(
      fc.asyncProperty(batchesArb, async (batches) => {
        const fromSqlite = await replay(sqlite, batches)
        const fromJetStream = await replay(jetStream, batches)
        expect(fromJetStream).toEqual(fromSqlite)
        const written = batches.flat().filter((m) => m.expectLastSubjectSeq === undefined && m.msgId === undefined)
        expect(fromSqlite.stored.length).toBeGreaterThanOrEqual(written.length)
      }),
      { numRuns: 30 },
    ))
})
