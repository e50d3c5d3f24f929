import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "./api.js"
import { Probes } from "./probes.js"

export const OperationsLive = HttpApiBuilder.group(SluiceApi, "operations", (handlers) =>
  Effect.map(Probes, (probes) =>
    handlers.handleRaw("healthz", () => probes.healthy).handleRaw("readyz", () => probes.readiness).handleRaw("metrics", () => probes.scrape),
  ),
)
