import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { asyncApiJson } from "../asyncapi/asyncApiJson.js"

/** `GET /asyncapi.json`: the event log's contract, generated from the event Schemas once at start. */
export const AsyncApiPage = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const body = new TextEncoder().encode(asyncApiJson())
    yield* router.get("/asyncapi.json", Effect.succeed(HttpServerResponse.uint8Array(body, { contentType: "application/json" })))
  }),
)
