import { isObject } from "../domain/json.js"
import { CHARS_PER_TOKEN } from "./Completion.js"
import { mulberry32 } from "./Prng.js"
import { parseJsonObject } from "./jsonBody.js"

/** The length of every vector the simulator makes; `dimensions` asks for a shorter one. */
export const SIM_EMBEDDING_DIMENSIONS = 384
/** OpenAI's bound on the inputs of one request. */
export const SIM_MAX_EMBEDDING_INPUTS = 2048

/** An embeddings request as the simulator reads it, with minimal validation. */
export interface EmbeddingsRequest {
  readonly model: string
  /** Texts, or token-id arrays (one tokenized text each). */
  readonly inputs: ReadonlyArray<string | ReadonlyArray<number>>
  readonly base64: boolean
  readonly dimensions: number
  /** The texts, joined: where directives are looked for. */
  readonly text: string
}

const isTokenId = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0
const isTokens = (value: unknown): boolean => Array.isArray(value) && value.length > 0 && value.every(isTokenId)

/** `input` as a list of inputs: a text, texts, one token-id array, or several; undefined for anything else. */
const inputsOf = (input: unknown): ReadonlyArray<string | ReadonlyArray<number>> | undefined => {
  if (typeof input === "string") return input.length > 0 ? [input] : undefined
  if (!Array.isArray(input) || input.length === 0 || input.length > SIM_MAX_EMBEDDING_INPUTS) return undefined
  if (input.every((text) => typeof text === "string" && text.length > 0)) return input as ReadonlyArray<string>
  if (isTokens(input)) return [input as ReadonlyArray<number>]
  if (input.every(isTokens)) return input as ReadonlyArray<ReadonlyArray<number>>
  return undefined
}

/** Returns the request, or the message of a 400 answer. */
export const parseEmbeddingsRequest = (body: string): EmbeddingsRequest | string => {
  const json = parseJsonObject(body)
  if (typeof json === "string") return json
  const { model, input, encoding_format: format, dimensions } = json
  if (typeof model !== "string" || model.length === 0) return "You must provide a model parameter."
  const inputs = inputsOf(input)
  if (inputs === undefined)
    return `'input' must be a non-empty string, or 1 to ${SIM_MAX_EMBEDDING_INPUTS} non-empty strings, token ids or token-id arrays.`
  if (format !== undefined && format !== "float" && format !== "base64") return "'encoding_format' must be 'float' or 'base64'."
  if (dimensions !== undefined && !(Number.isInteger(dimensions) && (dimensions as number) >= 1 && (dimensions as number) <= SIM_EMBEDDING_DIMENSIONS))
    return `'dimensions' must be an integer from 1 to ${SIM_EMBEDDING_DIMENSIONS}.`
  let text = ""
  for (const one of inputs) if (typeof one === "string") text += text === "" ? one : `\n${one}`
  return {
    model,
    inputs,
    base64: format === "base64",
    dimensions: typeof dimensions === "number" ? dimensions : SIM_EMBEDDING_DIMENSIONS,
    text,
  }
}

/** FNV-1a over the input: a text's UTF-16 units, or a token array's ids. */
const seedOf = (input: string | ReadonlyArray<number>): number => {
  let hash = 0x811c9dc5
  if (typeof input === "string") {
    for (let i = 0; i < input.length; i++) hash = Math.imul(hash ^ input.charCodeAt(i), 0x01000193)
  } else {
    for (const id of input) hash = Math.imul(hash ^ (id & 0xffffffff) ^ 0x9e3779b9, 0x01000193)
  }
  return hash >>> 0
}

/**
 * The input's vector: seeded from the input alone, so the same input always gets the same vector, of
 * unit length, in float32 precision (as both encodings carry it). A shorter one is the full vector's
 * first `dimensions` values, scaled to unit length again, as models trained for shortening answer.
 */
export const embeddingOf = (input: string | ReadonlyArray<number>, dimensions: number): Float32Array => {
  const random = mulberry32(seedOf(input))
  const values = new Float64Array(dimensions)
  let norm = 0
  for (let i = 0; i < SIM_EMBEDDING_DIMENSIONS; i++) {
    const value = random() * 2 - 1
    if (i < dimensions) {
      values[i] = value
      norm += value * value
    }
  }
  const scale = norm === 0 ? 0 : 1 / Math.sqrt(norm)
  const vector = new Float32Array(dimensions)
  for (let i = 0; i < dimensions; i++) vector[i] = values[i]! * scale
  return vector
}

/** A text's tokens as the simulator counts them (as its completions' `usage.prompt_tokens` do); a token array's length. */
export const inputTokens = (input: string | ReadonlyArray<number>): number =>
  typeof input === "string" ? Math.max(1, Math.ceil(input.length / CHARS_PER_TOKEN)) : input.length

/** OpenAI's base64 encoding: the float32 values' little-endian bytes. */
const base64Of = (vector: Float32Array): string => {
  const bytes = Buffer.alloc(vector.length * 4)
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i]!, i * 4)
  return bytes.toString("base64")
}

/** An embeddings answer (`object: "list"`); `quotedModel` is the model name already JSON-encoded. */
export const embeddingsJson = (quotedModel: string, request: EmbeddingsRequest): string => {
  let data = ""
  let tokens = 0
  for (let index = 0; index < request.inputs.length; index++) {
    const input = request.inputs[index]!
    tokens += inputTokens(input)
    const vector = embeddingOf(input, request.dimensions)
    const embedding = request.base64 ? `"${base64Of(vector)}"` : `[${vector.join(",")}]`
    data += `${index === 0 ? "" : ","}{"object":"embedding","index":${index},"embedding":${embedding}}`
  }
  return `{"object":"list","data":[${data}],"model":${quotedModel},"usage":{"prompt_tokens":${tokens},"total_tokens":${tokens}}}`
}
