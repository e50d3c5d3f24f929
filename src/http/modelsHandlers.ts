import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "./api.js"
import { authenticate } from "./auth.js"
import { ModelList } from "./modelList.js"
import { respondJson } from "./respond.js"

export const ModelsLive = HttpApiBuilder.group(SluiceApi, "models", (handlers) =>
  Effect.map(ModelList, (models) => handlers.handleRaw("list", () => respondJson(Effect.map(authenticate, models.forCaller)))),
)
