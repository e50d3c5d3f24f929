import { Schema } from "effect"
import { type BatchEndpoint, CHAT_ENDPOINT } from "../domain/batch/endpoint.js"

/**
 * What an upstream serves. A model that serves chat completions serves Responses rows too: Sluice sends
 * them upstream as chat completions.
 */
export const UpstreamEndpoint = Schema.Literal("/v1/chat/completions", "/v1/embeddings")

export const CatalogModel = Schema.Struct({
  id: Schema.String.pipe(Schema.minLength(1)),
  /** An OpenAI-compatible base URL ending in /v1. */
  upstream_url: Schema.String.pipe(Schema.pattern(/^https?:\/\/.+\/v1\/?$/)),
  upstream_model: Schema.optional(Schema.String),
  batch_concurrency: Schema.optional(Schema.Int.pipe(Schema.between(1, 10_000))),
  input_usd_per_mtok: Schema.optional(Schema.NonNegative),
  output_usd_per_mtok: Schema.optional(Schema.NonNegative),
  timeout_ms: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /** Sent as `Authorization: Bearer` to the upstream (vLLM `--api-key`, hosted providers). */
  api_key: Schema.optional(Schema.String),
  /** Default: chat completions only. */
  endpoints: Schema.optional(Schema.NonEmptyArray(UpstreamEndpoint)),
})

export const CatalogFile = Schema.Struct({ models: Schema.Array(CatalogModel) })

export const decodeCatalogFile = Schema.decodeUnknown(CatalogFile, { onExcessProperty: "error" })

export interface ModelEntry {
  readonly id: string
  readonly upstreamUrl: string
  readonly upstreamModel: string
  readonly batchConcurrency: number
  readonly inputUsdPerMtok: number
  readonly outputUsdPerMtok: number
  readonly timeoutMs: number
  readonly apiKey: string | undefined
  /** The batch endpoints the model's rows may call. */
  readonly endpoints: ReadonlyArray<BatchEndpoint>
}

export type Catalog = ReadonlyMap<string, ModelEntry>

export const DEFAULT_BATCH_CONCURRENCY = 8
export const DEFAULT_TIMEOUT_MS = 600_000

/** The batch endpoints an upstream serving these serves: Responses rows wherever chat completions run. */
export const servedEndpoints = (upstream: ReadonlyArray<typeof UpstreamEndpoint.Type> = ["/v1/chat/completions"]): ReadonlyArray<BatchEndpoint> => {
  const served: Array<BatchEndpoint> = []
  if (upstream.includes("/v1/chat/completions")) served.push(CHAT_ENDPOINT, "/v1/responses")
  if (upstream.includes("/v1/embeddings")) served.push("/v1/embeddings")
  return served
}

export const catalogFrom = (file: typeof CatalogFile.Type): Catalog =>
  new Map(
    file.models.map((m) => [
      m.id,
      {
        id: m.id,
        upstreamUrl: m.upstream_url.replace(/\/$/, ""),
        upstreamModel: m.upstream_model ?? m.id,
        batchConcurrency: m.batch_concurrency ?? DEFAULT_BATCH_CONCURRENCY,
        inputUsdPerMtok: m.input_usd_per_mtok ?? 0,
        outputUsdPerMtok: m.output_usd_per_mtok ?? 0,
        timeoutMs: m.timeout_ms ?? DEFAULT_TIMEOUT_MS,
        apiKey: m.api_key,
        endpoints: servedEndpoints(m.endpoints),
      },
    ]),
  )

/** The models the public API docs use, served by the built-in simulator when no catalog is configured. */
export const builtInModels = ["glm-5.3-flash", "qwen3.6-35b"] as const
/** The built-in simulator's embeddings model, so the embedded default runs `/v1/embeddings` rows too. */
export const builtInEmbeddingModel = "qwen3-embedding-0.6b"

export const costUsd = (model: ModelEntry, usage: unknown): number => {
  if (typeof usage !== "object" || usage === null) return 0
  const u = usage as { prompt_tokens?: unknown; completion_tokens?: unknown }
  const prompt = typeof u.prompt_tokens === "number" ? u.prompt_tokens : 0
  const completion = typeof u.completion_tokens === "number" ? u.completion_tokens : 0
  return (prompt * model.inputUsdPerMtok + completion * model.outputUsdPerMtok) / 1_000_000
}
