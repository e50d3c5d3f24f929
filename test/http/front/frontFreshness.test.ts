import { jetstream, jetstreamManager } from "@nats-io/jetstream"
import { connect, type NatsConnection } from "@nats-io/transport-node"
import Database from "better-sqlite3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeFrontFreshness } from "../../../src/http/front/frontFreshness.js"
import { type NatsServer, startNatsServer } from "../../support/natsServer.js"

const STREAM = "FRESHNESS"

/**
 * A front's answer to "does my read model hold what every call wrote?", against a real nats-server: the
 * last message on a call's subject (`<kind>.<id>.<type>`) against the least seq the read model's
 * offsets have applied; a lane window (four tokens) is no call's write.
 */
describe("a front's freshness", () => {
  let nats: NatsServer
  let nc: NatsConnection
  beforeAll(async () => {
    nats = await startNatsServer()
    nc = await connect({ servers: nats.url })
    const jsm = await jetstreamManager(nc)
    await jsm.streams.add({ name: STREAM, subjects: ["batch.>"] })
  })
  afterAll(async () => {
    await nc?.close()
    await nats?.stop()
  })

  const publish = async (subject: string) => (await jetstream(nc).publish(subject, "{}")).seq

  it("says caught up only once the read model has applied the last call's write, and fails a read model it cannot read", async () => {
    const db = new Database(":memory:")
    db.exec(`CREATE TABLE offsets (name TEXT PRIMARY KEY, seq INTEGER NOT NULL, resume_seq INTEGER NOT NULL)`)
    const freshness = await makeFrontFreshness(nats.url, db, STREAM)
    const created = await publish("batch.b1.batch_created")
    expect(await freshness.caughtUp()).toBe(false)
    db.prepare(`INSERT INTO offsets VALUES ('batches', ?, ?)`).run(created, created)
    expect(await freshness.caughtUp()).toBe(true)
    // A lane window is the owner's, not a call's: a read need not wait for it.
    await publish("batch.b1.lane.m")
    expect(await freshness.caughtUp()).toBe(true)
    await publish("batch.b1.batch_cancelling")
    // Many reads at once all get the shared answer.
    expect(await Promise.all(Array.from({ length: 50 }, () => freshness.caughtUp()))).toEqual(Array(50).fill(false))
    db.exec(`DROP TABLE offsets`)
    await expect(freshness.caughtUp()).rejects.toThrow(/offsets/)
  })
})
