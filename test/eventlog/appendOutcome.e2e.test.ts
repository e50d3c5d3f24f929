import { Context, Effect, Layer, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AppendOutcomeUnknown, EventLog } from "../../src/eventlog/EventLog.js"
import * as JetStreamEventLog from "../../src/eventlog/JetStreamEventLog.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"

const encoder = new TextEncoder()

describe("an append on NATS whose acknowledgement never comes", () => {
  let nats: NatsServer
  beforeAll(async () => {
    nats = await startNatsServer()
  })
  afterAll(() => nats?.stop())

  // A hung server read the publish off its socket or not: only asking it again tells.
  it("fails as an unknown outcome, and the same message sent again is stored once", async () => {
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const log = Context.get(yield* Layer.build(JetStreamEventLog.layer({ url: nats.url })), EventLog)
          const message = { subject: "batch.b1.batch_started", data: encoder.encode(`{"type":"batch_started","batch_id":"b1","at":1}`), msgId: "b1:batch_started", expectLastSubjectSeq: 0 }
          yield* Effect.promise(() => nats.freeze(true))
          const lost = yield* Effect.either(log.append([message])).pipe(Effect.ensuring(Effect.promise(() => nats.freeze(false))))
          expect(lost._tag).toBe("Left")
          if (lost._tag === "Left") expect(lost.left).toBeInstanceOf(AppendOutcomeUnknown)

          const again = yield* log.append([message]).pipe(Effect.retry({ times: 20, while: (e) => e._tag === "LogUnavailable" }))
          // The server had read it: the same id answers the first one's place.
          expect(again[0]!.duplicate).toBe(true)
          const stored = yield* Stream.runCollect(log.read("batch.b1.>", 1))
          expect([...stored].map((m) => m.seq)).toEqual([again[0]!.seq])
        }),
      ),
    )
  }, 30_000)
})
