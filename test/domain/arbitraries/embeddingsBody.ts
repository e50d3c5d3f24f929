import fc from "fast-check"
import type { BatchEndpoint } from "../../../src/domain/batch/endpoint.js"
import type { ModelAccess } from "../../../src/domain/batch/validateCreate.js"
import { MAX_EMBEDDING_INPUTS } from "../../../src/domain/embeddings/embeddingsBody.js"

type Obj = Record<string, unknown>

export const embeddingModel = "qwen3-embedding-0.6b"
export const chatModel = "glm-5.3-flash"
export const bothModel = "llama-4-scout"

const served: Readonly<Record<string, ReadonlyArray<BatchEndpoint>>> = {
  [chatModel]: ["/v1/chat/completions", "/v1/responses"],
  "qwen3.6-35b": ["/v1/chat/completions", "/v1/responses"],
  [embeddingModel]: ["/v1/embeddings"],
  [bothModel]: ["/v1/chat/completions", "/v1/responses", "/v1/embeddings"],
}

/** A catalog whose models say which endpoints they serve, as the configured catalog's do. */
export const endpointCatalog: ModelAccess = {
  isAvailable: (model) => served[model] !== undefined,
  endpointsOf: (model) => served[model] ?? [],
}

const tokenId = fc.nat({ max: 200_000 })

/** Every shape `input` may take: a text, texts, token ids, token-id arrays (at most 2048 of them). */
export const embeddingsInput: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ minLength: 1, maxLength: 40 }),
  fc.array(fc.string({ minLength: 1, maxLength: 20 }), { minLength: 1, maxLength: 8 }),
  fc.array(tokenId, { minLength: 1, maxLength: 16 }),
  fc.array(fc.array(tokenId, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 6 }),
  fc.constant(Array.from({ length: MAX_EMBEDDING_INPUTS }, (_, i) => `text ${i}`)),
)

/** A valid embeddings body, with fields the API does not document now and then (they pass through). */
export const embeddingsBody: fc.Arbitrary<Obj> = fc.record(
  {
    model: fc.constantFrom(embeddingModel, bothModel),
    input: embeddingsInput,
    encoding_format: fc.constantFrom("float", "base64"),
    dimensions: fc.integer({ min: 1, max: 4096 }),
    user: fc.string({ maxLength: 20 }),
    truncate_prompt_tokens: fc.integer({ min: 1, max: 512 }),
  },
  { requiredKeys: ["model", "input"] },
)

/** One documented field spoiled: the field a rejection must name, and what it must say of it. */
export interface EmbeddingsCorruption {
  readonly name: string
  readonly patch: Obj
  /** The path in the body the rejection names. */
  readonly path: string
  readonly problem: string
}

export const embeddingsCorruptions: ReadonlyArray<EmbeddingsCorruption> = [
  { name: "input an empty string", patch: { input: "" }, path: "input", problem: 'must be a non-empty string, an array of strings, an array of token ids or an array of token-id arrays, got ""' },
  { name: "input a number", patch: { input: 7 }, path: "input", problem: "must be a non-empty string, an array of strings, an array of token ids or an array of token-id arrays, got 7" },
  { name: "input an object", patch: { input: { text: "x" } }, path: "input", problem: "must be a non-empty string, an array of strings, an array of token ids or an array of token-id arrays, got an object" },
  { name: "input null", patch: { input: null }, path: "input", problem: "must be a non-empty string, an array of strings, an array of token ids or an array of token-id arrays, got null" },
  { name: "input an empty array", patch: { input: [] }, path: "input", problem: "must hold 1 to 2048 inputs, got 0" },
  { name: "input of 2049 texts", patch: { input: Array.from({ length: 2049 }, () => "x") }, path: "input", problem: "must hold 1 to 2048 inputs, got 2049" },
  { name: "an empty text among texts", patch: { input: ["a", "b", ""] }, path: "input[2]", problem: 'must be a non-empty string, as input[0] is, got ""' },
  { name: "a number among texts", patch: { input: ["a", 3] }, path: "input[1]", problem: "must be a non-empty string, as input[0] is, got 3" },
  { name: "a negative token id", patch: { input: [1, 2, -3] }, path: "input[2]", problem: "must be a token id (an integer of at least 0), got -3" },
  { name: "a fractional token id", patch: { input: [1.5] }, path: "input[0]", problem: "must be a non-empty string, a token id or an array of token ids, got 1.5" },
  { name: "a text among token ids", patch: { input: [1, "two"] }, path: "input[1]", problem: 'must be a token id (an integer of at least 0), got "two"' },
  { name: "an empty token array", patch: { input: [[1], []] }, path: "input[1]", problem: "must be a non-empty array of token ids, as input[0] is, got an array" },
  { name: "a text among token arrays", patch: { input: [[1], "two"] }, path: "input[1]", problem: 'must be a non-empty array of token ids, as input[0] is, got "two"' },
  { name: "a bad id in a token array", patch: { input: [[1], [2, "x"]] }, path: "input[1][1]", problem: 'must be a token id (an integer of at least 0), got "x"' },
  { name: "input[0] an object", patch: { input: [{ text: "x" }] }, path: "input[0]", problem: "must be a non-empty string, a token id or an array of token ids, got an object" },
  { name: "encoding_format unknown", patch: { encoding_format: "int8" }, path: "encoding_format", problem: 'must be one of float, base64, got "int8"' },
  { name: "encoding_format null", patch: { encoding_format: null }, path: "encoding_format", problem: "must be one of float, base64, got null" },
  { name: "dimensions zero", patch: { dimensions: 0 }, path: "dimensions", problem: "must be an integer of at least 1, got 0" },
  { name: "dimensions a fraction", patch: { dimensions: 2.5 }, path: "dimensions", problem: "must be an integer of at least 1, got 2.5" },
  { name: "dimensions a string", patch: { dimensions: "256" }, path: "dimensions", problem: 'must be an integer of at least 1, got "256"' },
  { name: "user a number", patch: { user: 42 }, path: "user", problem: "must be a string, got 42" },
]

export const embeddingsCorruption = fc.constantFrom(...embeddingsCorruptions)
