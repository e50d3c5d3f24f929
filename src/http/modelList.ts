import { Effect } from "effect"
import { ModelCatalog } from "../config/ModelCatalog.js"
import { isAutoModel } from "../domain/batch/validateCreate.js"
import type { Caller } from "./auth.js"

/** `GET /v1/models`: the catalog's models a caller's key may use, in OpenAI's list shape. */
export class ModelList extends Effect.Service<ModelList>()("Http/ModelList", {
  effect: Effect.gen(function* () {
    const catalog = yield* ModelCatalog
    // The catalog is read once at start: its models exist from then on.
    const created = Math.floor(Date.now() / 1000)
    const forCaller = (caller: Caller) => {
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
          endpoints: m.endpoints,
        }))
      return { object: "list" as const, data }
    }
    return { forCaller } as const
  }),
}) {}
