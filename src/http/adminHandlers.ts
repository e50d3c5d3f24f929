import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AdminAccounts } from "./adminAccounts.js"
import { SluiceApi } from "./api.js"
import { authenticateAdmin } from "./auth.js"
import { ModelStates } from "./modelStates.js"
import { respondJson } from "./respond.js"
import { HttpSettings } from "./settings.js"

export const AdminLive = HttpApiBuilder.group(SluiceApi, "admin", (handlers) =>
  Effect.gen(function* () {
    const accounts = yield* AdminAccounts
    const admin = authenticateAdmin((yield* HttpSettings).adminToken)
    return handlers
      .handleRaw("createAccount", () => respondJson(Effect.zipRight(admin, accounts.createAccount)))
      .handleRaw("updateAccount", ({ path }) => respondJson(Effect.zipRight(admin, accounts.updateAccount(path.id))))
      .handleRaw("createKey", ({ path }) => respondJson(Effect.zipRight(admin, accounts.createKey(path.id))))
      .handleRaw("revokeKey", ({ path }) => respondJson(Effect.zipRight(admin, accounts.revokeKey(path.id))))
  }),
)

export const AdminModelsLive = HttpApiBuilder.group(SluiceApi, "adminModels", (handlers) =>
  Effect.gen(function* () {
    const states = yield* ModelStates
    const admin = authenticateAdmin((yield* HttpSettings).adminToken)
    return handlers
      .handleRaw("leases", () => respondJson(Effect.zipRight(admin, states.leases)))
      .handleRaw("models", () => respondJson(Effect.zipRight(admin, states.models)))
      .handleRaw("history", () => respondJson(Effect.zipRight(admin, states.history)))
  }),
)
