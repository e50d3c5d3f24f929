import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { isResponseId } from "../domain/batch/subjects.js"
import { AdminAccounts } from "./adminAccounts.js"
import { BatchAccess } from "./batchAccess.js"
import { batchNotFound } from "./errors.js"
import { SluiceApi } from "./api.js"
import { authenticateAdmin } from "./auth.js"
import { ModelStates } from "./modelStates.js"
import { respondJson } from "./respond.js"
import { HttpSettings } from "./settings.js"

export const AdminLive = HttpApiBuilder.group(SluiceApi, "admin", (handlers) =>
  Effect.gen(function* () {
    const accounts = yield* AdminAccounts
    const access = yield* BatchAccess
    const admin = authenticateAdmin((yield* HttpSettings).adminToken)
    // No check of the log: an operator reads why a batch waits, the log's absence included.
    const batch = (id: string) =>
      Effect.suspend(() => {
        const row = isResponseId(id) ? undefined : access.batches.one(id)
        return row === undefined ? Effect.fail(batchNotFound(id)) : Effect.succeed(access.shown(row))
      })
    return handlers
      .handleRaw("batch", ({ path }) => respondJson(Effect.zipRight(admin, batch(path.batch_id))))
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
