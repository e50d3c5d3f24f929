import fc from "fast-check"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { BatchEvent } from "../src/domain/batch/events.js"
import { batchReads } from "../src/projections/batchReads.js"
import { createdRow } from "../src/projections/batches.js"
import { makeApplier } from "../src/projections/Projector.js"
import { ReadModel } from "../src/projections/ReadModel.js"

type Created = Extract<BatchEvent, { type: "batch_created" }>

const encoder = new TextEncoder()

const createdEvent: fc.Arbitrary<Created> = fc
  .record({
    n: fc.nat(),
    createdAt: fc.integer({ min: 0, max: 4_000_000_000_000 }),
    windowMs: fc.integer({ min: 1, max: 7 * 86_400_000 }),
    metadata: fc.option(fc.dictionary(fc.string({ maxLength: 64 }), fc.string({ unit: "grapheme", maxLength: 512 }), { maxKeys: 16 }), { nil: null }),
    total: fc.integer({ min: 1, max: 50_000 }),
    models: fc.uniqueArray(fc.string({ minLength: 1, maxLength: 40 }), { minLength: 1, maxLength: 4 }),
  })
  .map(({ n, createdAt, windowMs, metadata, total, models }) => ({
    type: "batch_created",
    batch_id: `batch_${n}`,
    account_id: `acct_${n % 7}`,
    key_id: `key_${n % 5}`,
    created_at: createdAt,
    expires_at: createdAt + windowMs,
    completion_window: `${Math.round(windowMs / 3_600_000)}h`,
    metadata,
    total,
    models,
  }))

/*
 * A create answers with the batch object before the read model has applied its batch_created event,
 * built by `createdRow`: it must be the row the projection then writes, or the create and the reads
 * after it would disagree.
 */
describe("the batch a create answers with", () => {
  const dir = mkdtempSync(join(tmpdir(), "sluice-created-"))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("is the row the projection writes for the same batch_created event", async () => {
    const scope = Effect.runSync(Scope.make())
    const db = await Effect.runPromise(
      Effect.map(Layer.buildWithScope(ReadModel.layer(join(dir, "read.sqlite")), scope), (c) => Context.get(c, ReadModel)),
    )
    const apply = makeApplier(db)
    const batches = batchReads(db)
    let seq = 0
    fc.assert(
      fc.property(createdEvent, (event) => {
        seq++
        const id = `${event.batch_id}_${seq}`
        const created = { ...event, batch_id: id }
        apply([{ seq, subject: `batch.${id}.batch_created`, data: encoder.encode(JSON.stringify(created)), time: 0 }])
        expect(batches.one(id)).toEqual(createdRow(created, seq))
      }),
      { numRuns: 300 },
    )
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })
})
