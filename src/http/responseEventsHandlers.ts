import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "./api.js"
import { authenticate } from "./auth.js"
import { respondJson } from "./respond.js"
import { ResponseEvents } from "./responseEvents.js"

export const ResponseEventsLive = HttpApiBuilder.group(SluiceApi, "responseEvents", (handlers) =>
  Effect.gen(function* () {
    const feed = yield* ResponseEvents
    return handlers.handleRaw("list", ({ urlParams }) => respondJson(Effect.flatMap(authenticate, (caller) => feed.page(caller, urlParams))))
  }),
)
