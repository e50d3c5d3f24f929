import { Either, Schema } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  BatchDeleted,
  BatchList,
  BatchObject,
  BatchStatus,
  CreateBatchPayload,
  OpenAIErrorBody,
  ResultLine,
  ResultsPage,
  RowErrorCode,
} from "../../src/domain/api/index.js"

const seedBatch = {
  id: "batch_6f1c0a7e2b8d4e55a1c3f9d2e4b6a8c0",
  object: "batch",
  endpoint: "/v1/chat/completions",
  errors: null,
  input_file_id: null,
  completion_window: "24h",
  status: "validating",
  output_file_id: null,
  error_file_id: null,
  created_at: 1792929600,
  in_progress_at: null,
  expires_at: 1793016000,
  finalizing_at: null,
  completed_at: null,
  failed_at: null,
  expired_at: null,
  cancelling_at: null,
  cancelled_at: null,
  request_counts: { total: 2, completed: 0, failed: 0 },
  metadata: { project: "eval-42" },
  cost_usd: 0.0,
  error: null,
  // Sluice's additions to the contract come after the seed's fields.
  rerun_of: null,
  priority: "standard",
  rows_ahead: null,
  estimated_completion_at: null,
  usage: {
    input_tokens: 0,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 0,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 0,
  },
  waiting_on: null,
}

const seedResults = {
  object: "list",
  data: [
    {
      id: "batch_req_1041",
      custom_id: "q-1",
      status: "completed",
      response: {
        status_code: 200,
        request_id: "req_2c9f6a1d8e7b4c03a5f1e2d3c4b5a697",
        body: { id: "chatcmpl-9b1e", object: "chat.completion", choices: [] },
      },
      error: null,
    },
    {
      id: "batch_req_1042",
      custom_id: "q-2",
      status: "failed",
      response: null,
      error: { code: "invalid_request", message: "...", status: 400 },
    },
  ],
  has_more: false,
  first_id: "batch_req_1041",
  last_id: "batch_req_1042",
}

const roundTrip = <A, I>(schema: Schema.Schema<A, I>, value: unknown) =>
  Schema.encodeSync(schema)(Schema.decodeUnknownSync(schema)(value))

describe("API schemas", () => {
  it("the seed's batch object round-trips with every field in the seed's order", () => {
    const encoded = roundTrip(BatchObject, seedBatch)
    expect(JSON.stringify(encoded)).toBe(JSON.stringify(seedBatch))
  })

  it("a batch object round-trips with its fields in the seed's order whatever order they arrive in", () => {
    fc.assert(
      fc.property(fc.shuffledSubarray(Object.keys(seedBatch), { minLength: Object.keys(seedBatch).length }), (keys) => {
        const shuffled = Object.fromEntries(keys.map((k) => [k, seedBatch[k as keyof typeof seedBatch]]))
        expect(Object.keys(roundTrip(BatchObject, shuffled))).toEqual(Object.keys(seedBatch))
      }),
    )
  })

  it("a failed batch carries its error and timestamps", () => {
    const failed = {
      ...seedBatch,
      status: "failed",
      failed_at: 1792933200,
      metadata: null,
      error: { code: "owner_unauthorized", message: "The API key that created this batch was revoked" },
    }
    expect(roundTrip(BatchObject, failed)).toEqual(failed)
  })

  it("every status but finalizing is a batch status", () => {
    for (const s of ["validating", "in_progress", "completed", "failed", "expired", "cancelling", "cancelled"])
      expect(Schema.is(BatchStatus)(s)).toBe(true)
    expect(Schema.is(BatchStatus)("finalizing")).toBe(false)
    expect(Either.isLeft(Schema.decodeUnknownEither(BatchObject)({ ...seedBatch, status: "finalizing" }))).toBe(true)
  })

  it("errors must be null; file fields are null or a file id; the endpoint is one of the three batchable ones", () => {
    expect(Either.isLeft(Schema.decodeUnknownEither(BatchObject)({ ...seedBatch, errors: "file-1" }))).toBe(true)
    for (const field of ["input_file_id", "output_file_id", "error_file_id"]) {
      expect(Either.isRight(Schema.decodeUnknownEither(BatchObject)({ ...seedBatch, [field]: "file-1" }))).toBe(true)
      expect(Either.isLeft(Schema.decodeUnknownEither(BatchObject)({ ...seedBatch, [field]: 1 }))).toBe(true)
    }
    for (const endpoint of ["/v1/chat/completions", "/v1/embeddings", "/v1/responses"])
      expect(Either.isRight(Schema.decodeUnknownEither(BatchObject)({ ...seedBatch, endpoint }))).toBe(true)
    expect(Either.isLeft(Schema.decodeUnknownEither(BatchObject)({ ...seedBatch, endpoint: "/v1/completions" }))).toBe(true)
  })

  it("the seed's results page round-trips", () => {
    expect(roundTrip(ResultsPage, seedResults)).toEqual(seedResults)
  })

  it("an empty page has null first and last ids", () => {
    const empty = { object: "list", data: [], has_more: false, first_id: null, last_id: null }
    expect(roundTrip(ResultsPage, empty)).toEqual(empty)
    expect(roundTrip(BatchList, empty)).toEqual(empty)
  })

  it("a batch list holds batch objects", () => {
    const page = { object: "list", data: [seedBatch], has_more: true, first_id: seedBatch.id, last_id: seedBatch.id }
    expect(roundTrip(BatchList, page)).toEqual(page)
  })

  it("result lines accept every result status and row error code, and nothing else", () => {
    const line = (status: string, code: string) => ({
      id: "batch_req_1",
      custom_id: "a",
      status,
      response: null,
      error: { code, message: "m" },
    })
    for (const status of ["queued", "running", "completed", "failed", "cancelled", "expired"])
      for (const code of RowErrorCode.literals) expect(Schema.is(ResultLine)(line(status, code))).toBe(true)
    expect(Schema.is(ResultLine)(line("finalizing", "timeout"))).toBe(false)
    expect(Schema.is(ResultLine)(line("failed", "owner_unauthorized"))).toBe(false)
  })

  it("a deleted batch is acknowledged as the seed shows", () => {
    const deleted = { id: seedBatch.id, object: "batch.deleted", deleted: true }
    expect(JSON.stringify(roundTrip(BatchDeleted, deleted))).toBe(JSON.stringify(deleted))
  })

  it("an OpenAI error body has message, type, param and code", () => {
    const body = { error: { message: "No such batch", type: "invalid_request_error", param: null, code: "not_found" } }
    expect(roundTrip(OpenAIErrorBody, body)).toEqual(body)
  })

  it("the documented create payload describes the seed's example", () => {
    const payload = {
      requests: [
        {
          custom_id: "q-1",
          method: "POST",
          url: "/v1/chat/completions",
          body: { model: "glm-5.3-flash", messages: [{ role: "user", content: "Summarize" }], max_tokens: 50 },
        },
      ],
      metadata: { project: "eval-42" },
    }
    expect(Schema.is(CreateBatchPayload)(payload)).toBe(true)
    expect(Schema.is(CreateBatchPayload)({ requests: [] })).toBe(false)
  })
})
