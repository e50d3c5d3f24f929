import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type InputKeyParts, inputKey } from "../../src/domain/idempotency/inputKey.js"
import { parseIdempotencyKey } from "../../src/domain/idempotency/verdict.js"

const hex64 = fc.stringMatching(/^[0-9a-f]{64}$/)
const parts: fc.Arbitrary<InputKeyParts> = fc
  .record({
    inputSha256: hex64,
    model: fc.option(fc.string(), { nil: undefined }),
    metadata: fc.option(fc.dictionary(fc.string(), fc.string()), { nil: undefined }),
    parts: fc.integer({ min: 1, max: 20 }),
  })
  .chain((p) => fc.integer({ min: 0, max: p.parts - 1 }).map((part) => ({ ...p, part })))

describe("an input's Idempotency-Key", () => {
  it("is the same for the same parts, and a header the server accepts as it is", () => {
    fc.assert(
      fc.property(parts, (p) => {
        const key = inputKey(p)
        expect(inputKey({ ...p, metadata: p.metadata === undefined ? undefined : { ...p.metadata } })).toBe(key)
        expect(parseIdempotencyKey(key)).toEqual({ key })
      }),
    )
  })

  it("differs when any part differs: the bytes, the model, the metadata or its order, the place in the split", () => {
    fc.assert(
      fc.property(parts, parts, (a, b) => {
        const same =
          a.inputSha256 === b.inputSha256 &&
          a.model === b.model &&
          JSON.stringify(a.metadata === undefined ? null : Object.entries(a.metadata)) ===
            JSON.stringify(b.metadata === undefined ? null : Object.entries(b.metadata)) &&
          a.part === b.part &&
          a.parts === b.parts
        expect(inputKey(a) === inputKey(b)).toBe(same)
      }),
    )
    const base: InputKeyParts = { inputSha256: "0".repeat(64), model: "m", metadata: { a: "1", b: "2" }, part: 0, parts: 2 }
    const variants: ReadonlyArray<InputKeyParts> = [
      { ...base, inputSha256: "1".repeat(64) },
      { ...base, model: undefined },
      { ...base, model: "n" },
      { ...base, metadata: undefined },
      { ...base, metadata: {} },
      { ...base, metadata: { b: "2", a: "1" } },
      { ...base, part: 1 },
      { ...base, parts: 3 },
    ]
    const keys = new Set([base, ...variants].map(inputKey))
    expect(keys.size).toBe(variants.length + 1)
  })
})
