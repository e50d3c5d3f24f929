import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "./api.js"
import { authenticate, requireBatchAccess } from "./auth.js"
import { Files } from "./files.js"
import { errorResponse, respondJson, respondRaw } from "./respond.js"

export const FilesLive = HttpApiBuilder.group(SluiceApi, "files", (handlers) =>
  Effect.map(Files, (files) =>
    handlers
      .handleRaw("create", () =>
        Effect.flatMap(Effect.flatMap(authenticate, requireBatchAccess), files.create).pipe(
          Effect.map((file) => HttpServerResponse.unsafeJson(file)),
          // A refused upload may not have been read to its end: the connection goes with the answer.
          Effect.catchAll((error) => Effect.succeed(HttpServerResponse.setHeader(errorResponse(error), "connection", "close"))),
        ),
      )
      // Like a batch, a file is read and deleted by its account whatever its tier now.
      .handleRaw("list", ({ urlParams }) => respondJson(Effect.flatMap(authenticate, (caller) => files.list(caller, urlParams))))
      .handleRaw("retrieve", ({ path }) => respondJson(Effect.flatMap(authenticate, (caller) => files.get(caller, path.file_id))))
      .handleRaw("content", ({ path }) => respondRaw(Effect.flatMap(authenticate, (caller) => files.content(caller, path.file_id))))
      .handleRaw("delete", ({ path }) => respondJson(Effect.flatMap(authenticate, (caller) => files.remove(caller, path.file_id)))),
  ),
)
