import { Schema } from "effect"

/*
 * The endpoint a batch's rows call, one per batch as OpenAI's batch API requires. Chat completions is
 * FreeInference's only one and every batch stored before the others existed; embeddings and Responses
 * rows are OpenAI's other batchable endpoints.
 */

export const BatchEndpoints = ["/v1/chat/completions", "/v1/embeddings", "/v1/responses"] as const
export const BatchEndpoint = Schema.Literal(...BatchEndpoints)
export type BatchEndpoint = typeof BatchEndpoint.Type

export const CHAT_ENDPOINT: BatchEndpoint = "/v1/chat/completions"

export const isBatchEndpoint = (value: unknown): value is BatchEndpoint =>
  typeof value === "string" && (BatchEndpoints as ReadonlyArray<string>).includes(value)
