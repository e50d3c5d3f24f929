import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "./api.js"
import { authenticate } from "./auth.js"
import { badRequest } from "./errors.js"
import { QueuedResponses } from "./queuedResponses.js"
import { respondJson } from "./respond.js"

const limitOf = (text: string | undefined) => {
  if (text === undefined) return Effect.succeed(20)
  const n = Number(text)
  return Number.isInteger(n) && n >= 1 && n <= 100
    ? Effect.succeed(n)
    : Effect.fail(badRequest(`'limit' must be an integer from 1 to 100, got '${text}'`, "limit"))
}

export const StoredResponsesLive = HttpApiBuilder.group(SluiceApi, "storedResponses", (handlers) =>
  Effect.map(QueuedResponses, (responses) =>
    handlers
      .handleRaw("list", ({ urlParams }) =>
        respondJson(
          Effect.flatMap(authenticate, (caller) =>
            Effect.flatMap(limitOf(urlParams.limit), (limit) => responses.list(caller, limit, urlParams.after, urlParams.stream_id)),
          ),
        ),
      )
      .handleRaw("retrieve", ({ path }) => respondJson(Effect.flatMap(authenticate, (caller) => responses.get(caller, path.response_id))))
      .handleRaw("cancel", ({ path }) => respondJson(Effect.flatMap(authenticate, (caller) => responses.cancel(caller, path.response_id))))
      .handleRaw("delete", ({ path }) => respondJson(Effect.flatMap(authenticate, (caller) => responses.cancel(caller, path.response_id)))),
  ),
)
