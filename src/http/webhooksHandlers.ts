import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "./api.js"
import { authenticateAdmin } from "./auth.js"
import { respondJson } from "./respond.js"
import { HttpSettings } from "./settings.js"
import { WebhookEndpoints } from "./webhookEndpoints.js"

export const WebhooksLive = HttpApiBuilder.group(SluiceApi, "webhooks", (handlers) =>
  Effect.gen(function* () {
    const webhooks = yield* WebhookEndpoints
    const admin = authenticateAdmin((yield* HttpSettings).adminToken)
    return handlers
      .handleRaw("createWebhook", ({ path }) => respondJson(Effect.zipRight(admin, webhooks.create(path.id))))
      .handleRaw("listWebhooks", ({ path }) => respondJson(Effect.zipRight(admin, webhooks.list(path.id))))
      .handleRaw("deleteWebhook", ({ path }) => respondJson(Effect.zipRight(admin, webhooks.remove(path.id))))
      .handleRaw("webhookDeliveries", ({ path }) => respondJson(Effect.zipRight(admin, webhooks.deliveries(path.id))))
  }),
)
