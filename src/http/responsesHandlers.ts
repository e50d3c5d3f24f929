import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "./api.js"
import { authenticate } from "./auth.js"
import { respondJson } from "./respond.js"
import { Responses } from "./responses.js"

export const ResponsesLive = HttpApiBuilder.group(SluiceApi, "responses", (handlers) =>
  Effect.map(Responses, (responses) => handlers.handleRaw("create", () => respondJson(Effect.flatMap(authenticate, responses.create)))),
)
