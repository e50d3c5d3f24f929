import { Chunk, Context, Effect, Layer, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { oneStream, type StreamEvent, streamSubject } from "../../src/domain/stream/events.js"
import { EventLog, type EventLogShape } from "../../src/eventlog/EventLog.js"
import * as JetStreamEventLog from "../../src/eventlog/JetStreamEventLog.js"
import { makeAppliedLinks } from "../../src/projections/appliedLinks.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"

/*
 * The projections check that what they applied is what the log holds (appliedLinks.ts): a subject the log
 * no longer holds counts as purged, not as a divergence, once its aggregate's tombstone is in the log. A
 * stream has no deletion event before its purge: its tombstone, `stream_purged`, is what says so.
 */
describe("a stream's subjects purged after its retention, on NATS", () => {
  let nats: NatsServer
  beforeAll(async () => {
    nats = await startNatsServer()
  })
  afterAll(async () => {
    await nats?.stop()
  })

  const encode = (event: StreamEvent) => new TextEncoder().encode(JSON.stringify(event))
  const ids = (stream_id: string) => ({ stream_id, account_id: "acct", at: 1 })
  /** A stream created and archived, as the projections saw it; then its history purged. */
  const appliedThenPurged = (log: EventLogShape, id: string) =>
    Effect.gen(function* () {
      const links = makeAppliedLinks()
      yield* log.append([
        { subject: streamSubject(id, "stream_created"), data: encode({ type: "stream_created", ...ids(id), key_id: "k", name: "n", window: "24h" }), expectLastSubjectSeq: 0 },
        { subject: streamSubject(id, "stream_archived"), data: encode({ type: "stream_archived", ...ids(id) }), expectLastSubjectSeq: 0 },
      ])
      const applied = Chunk.toReadonlyArray(yield* Stream.runCollect(log.read(oneStream(id), 1, { withoutHeaders: true })))
      expect(applied.map((m) => m.link !== undefined)).toEqual([true, true])
      for (const m of applied) links.saw(m)
      expect(yield* log.purge(oneStream(id))).toBe(2)
      return links
    })

  it("is no divergence once the stream's tombstone is in the log, and is one without it", () =>
    Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const log = Context.get(yield* Layer.build(JetStreamEventLog.layer({ url: nats.url })), EventLog)
          const buried = yield* appliedThenPurged(log, "stream_buried")
          yield* log.append([
            {
              subject: streamSubject("stream_buried", "stream_purged"),
              data: encode({ type: "stream_purged", ...ids("stream_buried"), created_at: 1, archived_at: 1 }),
              expectLastSubjectSeq: 0,
            },
          ])
          expect(yield* buried.diverged(log)).toEqual([])
          expect(buried.apart()).toBe(false)

          const lost = yield* appliedThenPurged(log, "stream_lost")
          expect([...(yield* lost.diverged(log))].sort()).toEqual([streamSubject("stream_lost", "stream_archived"), streamSubject("stream_lost", "stream_created")])
        }),
      ),
    ))
})
