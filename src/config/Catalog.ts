import { Schema } from "effect"

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
}

export type Catalog = ReadonlyMap<string, ModelEntry>

export const DEFAULT_BATCH_CONCURRENCY = 8
export const DEFAULT_TIMEOUT_MS = 600_000

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
      },
    ]),
  )

/** The models the public API docs use, served by the built-in simulator when no catalog is configured. */
export const builtInModels = ["glm-5.3-flash", "qwen3.6-35b"] as const

export const costUsd = (model: ModelEntry, usage: unknown): number => {
  if (typeof usage !== "object" || usage === null) return 0
  const u = usage as { prompt_tokens?: unknown; completion_tokens?: unknown }
  const prompt = typeof u.prompt_tokens === "number" ? u.prompt_tokens : 0
  const completion = typeof u.completion_tokens === "number" ? u.completion_tokens : 0
  return (prompt * model.inputUsdPerMtok + completion * model.outputUsdPerMtok) / 1_000_000
}
