import { createHash } from "node:crypto"
import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { encodedMessages, rowsMessages, type RowsMessages } from "../../src/actors/rowsAdded.js"
import type { BatchEndpoint } from "../../src/domain/batch/endpoint.js"
import { validateCreateBatch } from "../../src/domain/batch/validateCreate.js"
import { BodyMessage } from "../../src/http/bodyMessages.js"
import { type CreateBodyAnswer, prepareCreateBody } from "../../src/http/createBody.js"
import { catalog, catalogModels, corruption, validBatch } from "../domain/arbitraries/createBatch.js"

/*
 * A create body read by prepareCreateBody (on the create thread, or where it arrived) answers what reading
 * it as JSON and checking it on the dispatch thread answered before: the same refusal, or the same batch
 * whose rows' events have the same bytes.
 */
const served = new Map<string, ReadonlyArray<BatchEndpoint>>(catalogModels.map((m) => [m, ["/v1/chat/completions", "/v1/responses"]]))
const BATCH = "batch_0123456789abcdef0123456789abcdef"

/** Every message of a create's rows, the bodies' and then the rows_added ones for made-up positions. */
const bytesOf = (messages: RowsMessages) => {
  const bodies: Array<string> = []
  for (let group = messages.nextBodies(); group !== undefined; group = messages.nextBodies()) {
    for (const m of group) bodies.push(`${m.subject} ${m.msgId} ${Buffer.from(m.data).toString("utf8")}`)
  }
  const stored = bodies.map((_, i) => ({ seq: 10 + i, firstSeq: 10 + i, duplicate: false }))
  const added = messages.rowsAdded(stored).map((m) => `${m.subject} ${m.msgId} ${Buffer.from(m.data).toString("utf8")}`)
  return { bodies, added }
}

/** What the create answered before: the body parsed and checked where it arrived, its rows serialized by rowsMessages. */
const before = (text: string) => {
  if (text.length === 0) return { refused: { message: BodyMessage.empty, param: null } }
  let input: unknown
  try {
    input = JSON.parse(text)
  } catch {
    return { refused: { message: BodyMessage.notJson, param: null } }
  }
  const checked = validateCreateBatch(input, catalog)
  if (Either.isLeft(checked)) return { refused: { message: checked.left.message, param: checked.left.param } }
  const batch = checked.right
  return {
    batch: { endpoint: batch.endpoint, metadata: batch.metadata, priority: batch.priority, rowModels: batch.requests.map((r) => r.model) },
    rows: bytesOf(rowsMessages(BATCH, batch.requests)),
  }
}

const now = (answer: CreateBodyAnswer) => {
  const p = answer.prepared
  if (p._tag === "Refused") return { refused: { message: p.message, param: p.param } }
  if (p._tag === "Other") return { other: p.input }
  return { batch: { endpoint: p.endpoint, metadata: p.metadata, priority: p.priority, rowModels: p.rowModels }, rows: bytesOf(encodedMessages(p.encoded)) }
}

const prepare = (text: string, digest = false) =>
  prepareCreateBody({ bytes: Buffer.from(text, "utf8"), batchId: BATCH, accountModels: null, digest }, served)

/** Create bodies as clients send them: valid, with one row spoiled, not JSON, or not a batch at all. */
const bodies = fc.oneof(
  validBatch(30).map((b) => JSON.stringify(b)),
  fc
    .tuple(validBatch(30), fc.nat(), corruption)
    .map(([b, at, c]) => JSON.stringify({ ...b, requests: b.requests.map((r, i) => (i === at % b.requests.length ? c.apply(r) : r)) })),
  validBatch(5).map((b) => JSON.stringify(b).slice(0, -1)),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.constant(""),
)

describe("a create body read for the create thread", () => {
  it("answers what parsing and checking it on the dispatch thread answered: the same refusal, or the same batch with its rows' events byte for byte", () => {
    fc.assert(
      fc.property(bodies, (text) => {
        expect(now(prepare(text))).toEqual(before(text))
      }),
      { numRuns: 400 },
    )
  })

  it("serializes rows in many groups as rowsMessages does: a batch of several MiB, bodies with text beyond ASCII", () => {
    const requests = Array.from({ length: 3_000 }, (_, i) => ({
      custom_id: `row-${i}`,
      body: { model: catalogModels[i % 3], messages: [{ role: "user", content: `Grüße ${i} ✓ ${"x".repeat(3_000)}` }] },
    }))
    const text = JSON.stringify({ requests, metadata: { run: "big" } })
    const answer = now(prepare(text))
    expect(answer.rows?.bodies.length).toBeGreaterThan(30)
    expect(answer).toEqual(before(text))
  })

  it("answers a body from an uploaded file as it was sent, for the create to check as before", () => {
    expect(now(prepare(JSON.stringify({ input_file_id: "file-1", endpoint: "/v1/chat/completions" })))).toEqual({
      other: { input_file_id: "file-1", endpoint: "/v1/chat/completions" },
    })
  })

  it("answers the body's digest as an idempotency record keeps it, whatever the body holds, only when asked", () => {
    fc.assert(
      fc.property(bodies, (text) => {
        expect(prepare(text, true).bodySha256).toBe(createHash("sha256").update(text).update("\n").digest("hex"))
        expect(prepare(text).bodySha256).toBeUndefined()
      }),
      { numRuns: 100 },
    )
  })

  it("checks the models against the caller's account's list", () => {
    const text = JSON.stringify({ requests: [{ custom_id: "a", body: { model: catalogModels[1], messages: [{ role: "user", content: "hi" }] } }] })
    const narrowed = prepareCreateBody({ bytes: Buffer.from(text), batchId: BATCH, accountModels: [catalogModels[0]], digest: false }, served)
    expect(narrowed.prepared).toMatchObject({ _tag: "Refused", param: "requests[0].body.model" })
    const allowed = prepareCreateBody({ bytes: Buffer.from(text), batchId: BATCH, accountModels: [catalogModels[1]], digest: false }, served)
    expect(allowed.prepared._tag).toBe("Batch")
  })
})
