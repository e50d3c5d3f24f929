import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Metrics } from "../metrics/Metrics.js"
import { SluiceApi } from "./api.js"
import { authenticate, requireBatchAccess } from "./auth.js"
import { BatchCommands } from "./batchCommands.js"
import { BatchQueries } from "./batchQueries.js"
import { statusOf } from "./errors.js"
import { type ApiError, respondCreated, respondJson, respondJsonText, respondRaw } from "./respond.js"

const batchCaller = authenticate.pipe(Effect.flatMap(requireBatchAccess))

export const BatchesLive = HttpApiBuilder.group(SluiceApi, "batches", (handlers) =>
  Effect.gen(function* () {
    const commands = yield* BatchCommands
    const queries = yield* BatchQueries
    const metrics = yield* Metrics
    const countRefused = <A, R>(create: Effect.Effect<A, ApiError, R>) =>
      Effect.tapError(create, (error) => Effect.sync(() => metrics.createRefused(statusOf(error))))
    return handlers
      .handleRaw("create", () => respondCreated(Effect.flatMap(batchCaller, commands.create).pipe(countRefused)))
      .handleRaw("estimate", () => respondJson(Effect.flatMap(batchCaller, commands.estimate)))
      .handleRaw("rerun", ({ path }) => respondCreated(Effect.flatMap(batchCaller, (caller) => commands.rerun(caller, path.batch_id)).pipe(countRefused)))
      .handleRaw("retrieve", ({ path, urlParams }) =>
        respondJson(Effect.flatMap(authenticate, (caller) => queries.retrieve(caller, path.batch_id, urlParams))),
      )
      .handleRaw("list", ({ urlParams }) => respondJson(Effect.flatMap(authenticate, (caller) => queries.list(caller, urlParams))))
      .handleRaw("results", ({ path, urlParams }) =>
        respondJsonText(Effect.flatMap(authenticate, (caller) => queries.resultsPage(caller, path.batch_id, urlParams))),
      )
      .handleRaw("result", ({ path }) =>
        respondJsonText(Effect.flatMap(authenticate, (caller) => queries.result(caller, path.batch_id, path.result_id))),
      )
      .handleRaw("progress", ({ path }) => respondJson(Effect.flatMap(authenticate, (caller) => queries.progress(caller, path.batch_id))))
      .handleRaw("resultsJsonl", ({ path }) => respondRaw(Effect.flatMap(authenticate, (caller) => queries.resultsJsonl(caller, path.batch_id))))
      .handleRaw("events", ({ path, urlParams }) =>
        respondRaw(Effect.flatMap(authenticate, (caller) => queries.events(caller, path.batch_id, urlParams.last_event_id))),
      )
      .handleRaw("cancel", ({ path }) => respondJson(Effect.flatMap(authenticate, (caller) => commands.cancel(caller, path.batch_id))))
      .handleRaw("delete", ({ path }) => respondJson(Effect.flatMap(authenticate, (caller) => commands.remove(caller, path.batch_id))))
  }),
)
