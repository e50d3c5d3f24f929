import { Context, Effect, Exit, Layer, Scope } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { batchFileReads } from "../../src/projections/batchFileReads.js"
import { ReadModel } from "../../src/projections/ReadModel.js"

/*
 * The output and error files of a file-based batch are built by SQLite from its results: read page by
 * page they must give each row of their kind once, in order, in OpenAI's output-line format, and their
 * size must be the bytes a client downloads, whatever the custom_ids and bodies hold.
 */

const status = fc.constantFrom("completed", "failed", "cancelled", "expired")
const text = fc.string({ unit: "binary", maxLength: 40 })
const row = fc.record({
  custom_id: fc.string({ unit: "binary", minLength: 1, maxLength: 30 }),
  status,
  body: fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(text, fc.integer(), fc.constant(null)), { maxKeys: 4 }),
  message: text,
})

const kinds = ["output", "error"] as const

describe("a file-based batch's output and error files", () => {
  it("read page by page, give each row of their kind once, in order, in pages of at most maxBytes or one line, and their size is their bytes", () => {
    fc.assert(
      fc.property(fc.array(row, { maxLength: 40 }), fc.integer({ min: 1, max: 7 }), fc.integer({ min: 1, max: 600 }), (rows, maxRows, maxBytes) => {
        const scope = Effect.runSync(Scope.make())
        try {
          const db = Context.get(Effect.runSync(Layer.buildWithScope(ReadModel.layer(":memory:"), scope)), ReadModel)
          const insert = db.prepare(`INSERT INTO results (batch_id, idx, custom_id, model, status, response, error) VALUES ('batch_1', ?, ?, 'm', ?, ?, ?)`)
          rows.forEach((r, i) => {
            const completed = r.status === "completed"
            insert.run(
              i,
              r.custom_id,
              r.status,
              completed ? JSON.stringify({ status_code: 200, request_id: `req-${i}`, body: r.body }) : null,
              completed ? null : JSON.stringify({ code: "server_error", message: r.message }),
            )
          })
          const reads = batchFileReads(db)
          for (const kind of kinds) {
            const chunks: Array<Buffer> = []
            for (let from: number | undefined = 0; from !== undefined; ) {
              const page = reads.page("batch_1", kind, from, maxRows, maxBytes)
              chunks.push(page.bytes)
              expect(page.bytes.byteLength <= maxBytes || page.bytes.indexOf(10) === page.bytes.byteLength - 1).toBe(true)
              expect(page.next === undefined || page.next > from).toBe(true)
              from = page.next
            }
            const file = Buffer.concat(chunks)
            expect(reads.bytes("batch_1", kind)).toBe(file.byteLength)
            const lines = file.toString("utf8").split("\n")
            expect(lines.pop()).toBe("")
            const expected = rows.flatMap((r, i) => ((r.status === "completed") === (kind === "output") ? [{ r, i }] : []))
            expect(lines.map((l) => JSON.parse(l))).toEqual(
              expected.map(({ r, i }) => ({
                id: `batch_req_${i + 1}`,
                custom_id: r.custom_id,
                response: kind === "output" ? { status_code: 200, request_id: `req-${i}`, body: r.body } : null,
                error: kind === "output" ? null : { code: "server_error", message: r.message },
              })),
            )
          }
        } finally {
          Effect.runSync(Scope.close(scope, Exit.void))
        }
      }),
      { numRuns: 150 },
    )
  })
})
