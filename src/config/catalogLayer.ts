import { Data, Effect, Layer, Option, ParseResult, type Scope } from "effect"
import { readFileSync } from "node:fs"
import { startSimulator } from "../sim/Simulator.js"
import { builtInEmbeddingModel, builtInModels, type Catalog, catalogFrom, decodeCatalogFile } from "./Catalog.js"
import { ModelCatalog } from "./ModelCatalog.js"

/** The catalog file cannot be used; `problem` says why in one line. */
export class CatalogInvalid extends Data.TaggedError("CatalogInvalid")<{ readonly path: string; readonly problem: string }> {
  override get message() {
    return `The model catalog ${this.path} ${this.problem}`
  }
}

const fromFile = (path: string) =>
  Effect.try({
    try: () => readFileSync(path, "utf8"),
    catch: (e) => new CatalogInvalid({ path, problem: `could not be read (${e instanceof Error ? e.message : String(e)})` }),
  }).pipe(
    Effect.flatMap((text) =>
      Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: (e) => new CatalogInvalid({ path, problem: `is not valid JSON (${e instanceof Error ? e.message : String(e)})` }),
      }),
    ),
    Effect.flatMap((json) =>
      decodeCatalogFile(json).pipe(
        Effect.mapError((e) => {
          const issues = ParseResult.ArrayFormatter.formatErrorSync(e).map((i) => `${i.path.join(".") || "(the file)"}: ${i.message}`)
          return new CatalogInvalid({ path, problem: `is invalid (${issues.join("; ")})` })
        }),
      ),
    ),
    Effect.map(catalogFrom),
  )

/** With no catalog configured, the models of the public docs are served by a simulator inside this process. */
const builtIn = Effect.acquireRelease(
  Effect.promise(() => startSimulator({ models: [...builtInModels, builtInEmbeddingModel], latencyMs: 50 })),
  (sim) => Effect.promise(() => sim.close()),
).pipe(
  Effect.tap((sim) =>
    Effect.logInfo(`no SLUICE_MODELS catalog: serving ${[...builtInModels, builtInEmbeddingModel].join(", ")} from the built-in simulator at ${sim.url}`),
  ),
  Effect.map((sim) =>
    catalogFrom({
      models: [
        ...builtInModels.map((id) => ({ id, upstream_url: sim.url, batch_concurrency: 8, input_usd_per_mtok: 0.1, output_usd_per_mtok: 0.4 })),
        { id: builtInEmbeddingModel, upstream_url: sim.url, batch_concurrency: 8, input_usd_per_mtok: 0.02, endpoints: ["/v1/embeddings"] as const },
      ],
    }),
  ),
)

export const catalogLayer = (modelsPath: Option.Option<string>) =>
  Layer.scoped(
    ModelCatalog,
    Option.match(modelsPath, { onNone: (): Effect.Effect<Catalog, CatalogInvalid, Scope.Scope> => builtIn, onSome: fromFile }),
  )
