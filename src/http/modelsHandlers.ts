import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ModelCatalog } from "../config/ModelCatalog.js"
import { isAutoModel } from "../domain/batch/validateCreate.js"
import { SluiceApi } from "./api.js"
import { authenticate } from "./auth.js"
import { respondJson } from "./respond.js"

export const ModelsLive = HttpApiBuilder.group(SluiceApi, "models", (handlers) =>
  Effect.gen(function* () {
    const catalog = yield* ModelCatalog
    // The catalog is read once at start: its models exist from then on.
    const created = Math.floor(Date.now() / 1000)
    return handlers.handleRaw("list", () =>
      respondJson(
        Effect.gen(function* () {
          const caller = yield* authenticate
          const allowed = caller.account.models
          const data = [...catalog.values()]
            .filter((m) => !isAutoModel(m.id) && (allowed === null || allowed.includes(m.id)))
            .map((m) => ({
              id: m.id,
              object: "model" as const,
              created,
              owned_by: "sluice",
              batch_concurrency: m.batchConcurrency,
              input_usd_per_mtok: m.inputUsdPerMtok,
              output_usd_per_mtok: m.outputUsdPerMtok,
            }))
          return { object: "list" as const, data }
        }),
      ),
    )
  }),
)
