import { Effect, Layer, Option, ParseResult } from "effect"
import { readFileSync } from "node:fs"
import { startSimulator } from "../sim/Simulator.js"
import { builtInModels, catalogFrom, decodeCatalogFile } from "./Catalog.js"
import { ModelCatalog } from "./ModelCatalog.js"

class CatalogInvalid extends Error {}

const fromFile = (path: string) =>
  Effect.try({
    try: () => JSON.parse(readFileSync(path, "utf8")) as unknown,
    catch: (e) => new CatalogInvalid(`The model catalog ${path} could not be read: ${String(e)}`),
  }).pipe(
    Effect.flatMap((json) =>
      decodeCatalogFile(json).pipe(
        Effect.mapError(
          (e) => new CatalogInvalid(`The model catalog ${path} is invalid:\n${ParseResult.TreeFormatter.formatErrorSync(e)}`),
        ),
      ),
    ),
    Effect.map(catalogFrom),
  )

/** With no catalog configured, the models of the public docs are served by a simulator inside this process. */
const builtIn = Effect.acquireRelease(
  Effect.promise(() => startSimulator({ models: [...builtInModels], latencyMs: 50 })),
  (sim) => Effect.promise(() => sim.close()),
).pipe(
  Effect.tap((sim) => Effect.logInfo(`no SLUICE_MODELS catalog: serving ${builtInModels.join(", ")} from the built-in simulator at ${sim.url}`)),
  Effect.map((sim) => catalogFrom({ models: builtInModels.map((id) => ({ id, upstream_url: sim.url, batch_concurrency: 8, input_usd_per_mtok: 0.1, output_usd_per_mtok: 0.4 })) })),
)

export const catalogLayer = (modelsPath: Option.Option<string>) =>
  Layer.scoped(ModelCatalog, Option.match(modelsPath, { onNone: () => builtIn, onSome: (path) => Effect.orDie(fromFile(path)) }))
