import { Context, Effect, Layer, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { BatchEvent } from "../../src/domain/batch/events.js"
import { StreamEvent } from "../../src/domain/stream/events.js"
import { currentVersion, upcast, versionOf } from "../../src/domain/versions/upcast.js"
import { makeApplier } from "../../src/projections/Projector.js"
import { ReadModel } from "../../src/projections/ReadModel.js"
import { tombstoneReads } from "../../src/projections/tombstoneReads.js"
import { batchCreated, batchId, createdAt } from "./arbitraries/batchCommands.js"

/** Reading upcasts every event to its type's current version; a log written by an older release replays unchanged. */
describe("event versions and upcasters", () => {
  const v1Deleted = { type: "batch_deleted", batch_id: batchId, at: createdAt + 5 }

  it("raises batch_deleted version 1 (no reason) to version 2, reason 'deleted'; a version 1 that had a reason keeps it", () => {
    expect(versionOf(v1Deleted)).toBe(1)
    expect(upcast(v1Deleted)).toEqual({ ...v1Deleted, v: 2, reason: "deleted" })
    expect(upcast({ ...v1Deleted, reason: "retention" })).toEqual({ ...v1Deleted, v: 2, reason: "retention" })
  })

  it("leaves events at their current version, and what is not an event, as they are", () => {
    const current = { type: "batch_deleted", v: 2, batch_id: batchId, at: 1, reason: "retention" }
    expect(upcast(current)).toBe(current)
    const created = batchCreated(3)
    expect(upcast(created)).toBe(created)
    expect(upcast("not an event")).toBe("not an event")
  })

  it("every event type decodes after upcasting from version 1, at its current version", () => {
    for (const member of BatchEvent.members) {
      const type = (member.fields.type as unknown as { literals: [string] }).literals[0]
      expect(currentVersion(type)).toBeGreaterThanOrEqual(1)
    }
    expect(BatchEvent.members.some((m) => "v" in m.fields)).toBe(true)
  })

  it("every stream event type is at version 1, written without `v`, and decodes as read", () => {
    const ids = { stream_id: "stream_v", account_id: "acct_v", at: createdAt }
    const written: ReadonlyArray<StreamEvent> = [
      { type: "stream_created", ...ids, key_id: "key_v", name: "n", window: "1h" },
      { type: "stream_renamed", ...ids, name: "m" },
      { type: "stream_cancelled", ...ids },
      { type: "stream_archived", ...ids },
      { type: "stream_purged", ...ids, created_at: createdAt, archived_at: createdAt },
    ]
    expect(new Set(written.map((e) => e.type))).toEqual(new Set(StreamEvent.members.map((m) => (m.fields.type as unknown as { literals: [string] }).literals[0])))
    for (const event of written) {
      expect(currentVersion(event.type)).toBe(1)
      expect(upcast(event)).toBe(event)
      expect(Schema.decodeUnknownSync(StreamEvent)(upcast(JSON.parse(JSON.stringify(event))))).toEqual(event)
    }
  })

  it("a response's version 1 deletion, on its own subjects, replays to the tombstone today's code writes", () =>
    Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const db = Context.get(yield* Layer.build(ReadModel.layer(":memory:")), ReadModel)
          const apply = makeApplier(db)
          const encode = (event: unknown) => new TextEncoder().encode(JSON.stringify(event))
          const id = "resp_v1"
          const response = { endpoint: "/v1/responses", background: true, service_tier: "default", stream_id: null, custom_id: null, echo: {} }
          const responses = db.prepare("SELECT count(*) FROM responses").pluck()
          expect(apply([{ seq: 1, subject: `response.${id}.batch_created`, data: encode({ ...batchCreated(1), batch_id: id, response }), time: 0 }])).toEqual([])
          expect(responses.get()).toBe(1)
          expect(apply([{ seq: 2, subject: `response.${id}.batch_deleted`, data: encode({ ...v1Deleted, batch_id: id }), time: 0 }])).toEqual([])
          expect(tombstoneReads(db).one(id)).toMatchObject({ reason: "deleted" })
          expect(responses.get()).toBe(0)
        }),
      ),
    ))

  it("a log with a version 1 deletion replays to the tombstone today's code writes", () =>
    Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const db = Context.get(yield* Layer.build(ReadModel.layer(":memory:")), ReadModel)
          const apply = makeApplier(db)
          const encode = (event: unknown) => new TextEncoder().encode(JSON.stringify(event))
          const skipped = apply([
            { seq: 1, subject: `batch.${batchId}.batch_created`, data: encode(batchCreated(0)), time: 0 },
            { seq: 2, subject: `batch.${batchId}.batch_deleted`, data: encode(v1Deleted), time: 0 },
          ])
          expect(skipped).toEqual([])
          expect(tombstoneReads(db).one(batchId)).toMatchObject({ reason: "deleted" })
        }),
      ),
    ))
})
