import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "./api.js"
import { authenticate, requireBatchAccess } from "./auth.js"
import { errorResponse, respondJson } from "./respond.js"
import { Streams } from "./streams.js"

const streamCaller = authenticate.pipe(Effect.flatMap(requireBatchAccess))

export const StreamsLive = HttpApiBuilder.group(SluiceApi, "streams", (handlers) =>
  Effect.map(Streams, (streams) =>
    handlers
      .handleRaw("create", () =>
        Effect.flatMap(streamCaller, streams.create).pipe(
          Effect.map((detail) => HttpServerResponse.unsafeJson(detail, { status: 201 })),
          Effect.catchAll((error) => Effect.succeed(errorResponse(error))),
        ),
      )
      // Like a batch's, a stream is read, renamed, cancelled and archived by its account whatever its tier now.
      .handleRaw("list", () => respondJson(Effect.flatMap(authenticate, streams.list)))
      .handleRaw("retrieve", ({ path }) => respondJson(Effect.flatMap(authenticate, (caller) => streams.get(caller, path.stream_id))))
      .handleRaw("update", ({ path }) => respondJson(Effect.flatMap(authenticate, (caller) => streams.patch(caller, path.stream_id)))),
  ),
)
