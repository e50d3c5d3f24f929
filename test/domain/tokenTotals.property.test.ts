import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { addTokens, batchUsage, completionTokens, noTokens, type TokenTotals } from "../../src/domain/batch/tokenTotals.js"

const count = fc.nat({ max: 2_000_000 })

/** A chat completion's `usage` as upstreams send it: the details absent, null, empty or filled. */
const usage = fc.record(
  {
    prompt_tokens: count,
    completion_tokens: count,
    total_tokens: count,
    prompt_tokens_details: fc.oneof(fc.constant(null), fc.constant({}), fc.record({ cached_tokens: count })),
    completion_tokens_details: fc.oneof(fc.constant(null), fc.constant({}), fc.record({ reasoning_tokens: count })),
  },
  { requiredKeys: ["prompt_tokens", "completion_tokens"] },
)

const totals: fc.Arbitrary<TokenTotals> = fc.record({
  input_tokens: count,
  cached_tokens: count,
  output_tokens: count,
  reasoning_tokens: count,
  total_tokens: count,
})

/** Rows, the same rows in another order, and a place to cut them in two. */
const rowsShuffledAndCut = fc
  .array(totals, { maxLength: 40 })
  .chain((rows) =>
    fc.tuple(fc.constant(rows), fc.shuffledSubarray(rows, { minLength: rows.length, maxLength: rows.length }), fc.nat({ max: rows.length })),
  )

const isCount = (n: number) => Number.isSafeInteger(n) && n >= 0

describe("a batch's token totals", () => {
  it("a completion's usage counts prompt as input and completion as output, each detail 0 where the upstream gave none, its own total else their sum", () => {
    fc.assert(
      fc.property(usage, fc.jsonValue(), (u, rest) => {
        const got = completionTokens({ object: "chat.completion", choices: [rest], usage: u })
        const details = (d: unknown, name: string) => ((d as Record<string, number> | null | undefined)?.[name] ?? 0)
        expect(got).toEqual({
          input_tokens: u.prompt_tokens,
          cached_tokens: details(u.prompt_tokens_details, "cached_tokens"),
          output_tokens: u.completion_tokens,
          reasoning_tokens: details(u.completion_tokens_details, "reasoning_tokens"),
          total_tokens: u.total_tokens ?? u.prompt_tokens + u.completion_tokens,
        })
      }),
    )
  })

  it("whatever an upstream answers, every figure is a count: an odd usage (a string, a fraction, a negative, none) adds 0 where it is odd", () => {
    fc.assert(
      fc.property(fc.anything(), (body) => {
        for (const n of Object.values(completionTokens(body))) expect(isCount(n)).toBe(true)
      }),
    )
    expect(completionTokens({ usage: { prompt_tokens: "12", completion_tokens: -3, total_tokens: 1.5 } })).toEqual(noTokens)
    expect(completionTokens({ usage: { prompt_tokens: 12, completion_tokens: 3 } })).toEqual({ ...noTokens, input_tokens: 12, output_tokens: 3, total_tokens: 15 })
    expect(completionTokens(null)).toEqual(noTokens)
  })

  it("rows summed in any order and any grouping give the same totals, and zero rows give zeros", () => {
    fc.assert(
      fc.property(rowsShuffledAndCut, ([rows, shuffled, at]) => {
        const sum = (xs: ReadonlyArray<TokenTotals>) => xs.reduce(addTokens, noTokens)
        expect(sum(shuffled)).toEqual(sum(rows))
        expect(addTokens(sum(rows.slice(0, at)), sum(rows.slice(at)))).toEqual(sum(rows))
        for (const field of Object.keys(noTokens) as Array<keyof TokenTotals>) {
          expect(sum(rows)[field]).toBe(rows.reduce((n, r) => n + r[field], 0))
        }
      }),
    )
    expect([].reduce(addTokens, noTokens)).toEqual(noTokens)
  })

  it("in the batch object, the details sit under input and output as OpenAI's batch usage has them", () => {
    fc.assert(
      fc.property(totals, (t) => {
        expect(batchUsage(t)).toEqual({
          input_tokens: t.input_tokens,
          input_tokens_details: { cached_tokens: t.cached_tokens },
          output_tokens: t.output_tokens,
          output_tokens_details: { reasoning_tokens: t.reasoning_tokens },
          total_tokens: t.total_tokens,
        })
      }),
    )
  })
})
