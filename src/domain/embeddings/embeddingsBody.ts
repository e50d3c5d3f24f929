/*
 * The fields of an embeddings request body that the OpenAI API documents, checked by type and range as
 * the API states them, as a chat body's are (../chat/chatBody.ts): a body every server would refuse is
 * refused before it is stored; fields the API does not document (vLLM's `truncate_prompt_tokens`, ...)
 * pass through untouched. Plain functions with no closure per row: a create checks up to 50,000 bodies.
 */

import { type BodyFault, shown } from "../chat/chatBody.js"
import type { JsonObject as Obj } from "../json.js"

/** OpenAI's bound on the inputs of one embeddings request. */
export const MAX_EMBEDDING_INPUTS = 2048

export const EncodingFormats = ["float", "base64"] as const

const INPUT = "a non-empty string, an array of strings, an array of token ids or an array of token-id arrays"

const fault = (path: string, expected: string, got: unknown): BodyFault => ({ path, problem: `must be ${expected}, got ${shown(got)}` })

const isTokenId = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0

const tokenIds = (path: string, value: ReadonlyArray<unknown>): BodyFault | undefined => {
  for (let j = 0; j < value.length; j++) if (!isTokenId(value[j])) return fault(`${path}[${j}]`, "a token id (an integer of at least 0)", value[j])
  return undefined
}

/**
 * `input`: one text, or up to 2048 of one kind: texts, token ids (one tokenized text) or token-id arrays
 * (several). The first element says which kind the array is; every text and token array is non-empty.
 */
const input = (value: unknown): BodyFault | undefined => {
  if (typeof value === "string") return value.length > 0 ? undefined : fault("input", INPUT, value)
  if (!Array.isArray(value)) return fault("input", INPUT, value)
  if (value.length === 0 || value.length > MAX_EMBEDDING_INPUTS)
    return { path: "input", problem: `must hold 1 to ${MAX_EMBEDDING_INPUTS} inputs, got ${value.length}` }
  const first: unknown = value[0]
  if (typeof first === "string") {
    for (let k = 0; k < value.length; k++) {
      const text: unknown = value[k]
      if (typeof text !== "string" || text.length === 0) return fault(`input[${k}]`, "a non-empty string, as input[0] is", text)
    }
    return undefined
  }
  if (isTokenId(first)) return tokenIds("input", value)
  if (Array.isArray(first)) {
    for (let k = 0; k < value.length; k++) {
      const tokens: unknown = value[k]
      if (!Array.isArray(tokens) || tokens.length === 0) return fault(`input[${k}]`, "a non-empty array of token ids, as input[0] is", tokens)
      const bad = tokenIds(`input[${k}]`, tokens)
      if (bad !== undefined) return bad
    }
    return undefined
  }
  return fault("input[0]", "a non-empty string, a token id or an array of token ids", first)
}

type Check = (value: unknown) => BodyFault | undefined

/** Every documented field this checks, by name; any other field passes through untouched. */
const checks: Readonly<Record<string, Check>> = {
  model: (v) => (typeof v === "string" && v.length > 0 ? undefined : fault("model", "a string naming a model", v)),
  input,
  encoding_format: (v) =>
    typeof v === "string" && (EncodingFormats as ReadonlyArray<string>).includes(v) ? undefined : fault("encoding_format", `one of ${EncodingFormats.join(", ")}`, v),
  dimensions: (v) => (Number.isSafeInteger(v) && (v as number) >= 1 ? undefined : fault("dimensions", "an integer of at least 1", v)),
  user: (v) => (typeof v === "string" ? undefined : fault("user", "a string", v)),
}

/** The first field at fault in the body's own key order, or undefined when every documented field is sound. */
export const checkEmbeddingsBody = (body: Obj): BodyFault | undefined => {
  if (body["model"] === undefined) return fault("model", "a string naming a model", undefined)
  if (body["input"] === undefined) return fault("input", INPUT, undefined)
  for (const key of Object.keys(body)) {
    const check = checks[key]
    if (check === undefined) continue
    const bad = check(body[key])
    if (bad !== undefined) return bad
  }
  return undefined
}

/** The fields this checks: the ones the OpenAI API documents for an embeddings request. */
export const checkedEmbeddingsFields: ReadonlyArray<string> = Object.keys(checks)
