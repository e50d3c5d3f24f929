import { Either, Schema } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { CreateAccountPayload, CreateKeyPayload, UpdateAccountPayload } from "../../src/domain/api/index.js"
import { invalidRequest } from "../../src/http/invalidRequest.js"

const payloads = [
  { request: { method: "POST", url: "/admin/v1/accounts" }, route: "POST /admin/v1/accounts", schema: CreateAccountPayload, valid: { id: "acct-1" } },
  { request: { method: "PATCH", url: "/admin/v1/accounts/acct-1" }, route: "PATCH /admin/v1/accounts/{id}", schema: UpdateAccountPayload, valid: {} },
  { request: { method: "POST", url: "/admin/v1/accounts/acct-1/keys" }, route: "POST /admin/v1/accounts/{id}/keys", schema: CreateKeyPayload, valid: {} },
] as const

const decode = (schema: Schema.Schema.AnyNoContext, input: unknown) => Schema.decodeUnknownEither(schema, { onExcessProperty: "error" })(input)

describe("the one formatter of decoding errors", () => {
  it("a payload with one field set to any value its schema refuses is answered in one line naming the request and that field", () => {
    const payload = fc.constantFrom(...payloads)
    fc.assert(
      fc.property(
        payload.chain((p) => fc.tuple(fc.constant(p), fc.constantFrom(...Object.keys(p.schema.fields)), fc.jsonValue())),
        ([p, field, value]) => {
          const decoded = decode(p.schema, { ...p.valid, [field]: value })
          fc.pre(Either.isLeft(decoded))
          const error = invalidRequest("body", p.request, (decoded as Either.Left<any, unknown>).left).error
          expect(error.message).not.toContain("\n")
          expect(error.message.startsWith(`Invalid request body for ${p.route}: '${field}`)).toBe(true)
          expect(error.param?.startsWith(field)).toBe(true)
          expect(error.type).toBe("invalid_request_error")
        },
      ),
      { numRuns: 500 },
    )
  })

  it("says what the field must be and what it got, following a nullable field to the check it failed", () => {
    const said = (input: unknown) =>
      invalidRequest("body", payloads[1].request, (decode(UpdateAccountPayload, input) as Either.Left<any, unknown>).left).error.message
    expect(said({ concurrency: "lots" })).toBe(`Invalid request body for PATCH /admin/v1/accounts/{id}: 'concurrency' must be a number, got "lots"`)
    expect(said({ concurrency: 2.5 })).toBe(`Invalid request body for PATCH /admin/v1/accounts/{id}: 'concurrency' must be an integer, got 2.5`)
    expect(said({ concurrency: 0 })).toBe(`Invalid request body for PATCH /admin/v1/accounts/{id}: 'concurrency' must be a positive number, got 0`)
    expect(said({ tier: 5 })).toBe(`Invalid request body for PATCH /admin/v1/accounts/{id}: 'tier' must be one of internal, standard, got 5`)
    expect(said({ models: ["a", 5] })).toBe(`Invalid request body for PATCH /admin/v1/accounts/{id}: 'models[1]' must be a string, got 5`)
    expect(said({ cores: 5 })).toBe(
      `Invalid request body for PATCH /admin/v1/accounts/{id}: unknown field 'cores' (it takes tier, daily_quota_usd, concurrency, models, max_priority, status)`,
    )
    expect(said([1])).toBe(`Invalid request body for PATCH /admin/v1/accounts/{id}: it must be a JSON object, got [1]`)
  })

  it("a query parameter given twice where one is taken is named as such", () => {
    const error = (decode(Schema.Struct({ limit: Schema.optional(Schema.String) }), { limit: ["1", "2"] }) as Either.Left<any, unknown>).left
    expect(invalidRequest("query", { method: "GET", url: "/v1/responses?limit=1&limit=2" }, error).error).toEqual({
      message: "Invalid query parameters for GET /v1/responses: 'limit' may be given only once",
      type: "invalid_request_error",
      param: "limit",
      code: null,
    })
  })
})
