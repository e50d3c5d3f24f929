import { HttpApiBuilder, type HttpApp, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import { AdminLive } from "./adminHandlers.js"
import { SluiceApi } from "./api.js"
import { BatchesLive } from "./batchesHandlers.js"

const envelope = (status: number, message: string, type: string, code: string) =>
  HttpServerResponse.unsafeJson({ error: { message, type, param: null, code } }, { status })

/** Whatever escapes the handlers still answers in the OpenAI error envelope, never as an empty 500. */
const errorEnvelopes = (app: HttpApp.Default): HttpApp.Default =>
  app.pipe(
    Effect.map((response) =>
      response.status === 404 && response.body._tag === "Empty"
        ? envelope(404, "No such endpoint", "invalid_request_error", "not_found")
        : response,
    ),
    Effect.catchAllCause((cause) =>
      Effect.logError("request failed unexpectedly", cause).pipe(
        Effect.as(envelope(500, "The server failed to answer this request", "server_error", "internal_error")),
      ),
    ),
  )

export const ApiLive = HttpApiBuilder.api(SluiceApi).pipe(Layer.provide(BatchesLive), Layer.provide(AdminLive))

export const serverLayer = (options: { readonly port: number; readonly host: string }) =>
  HttpApiBuilder.serve(errorEnvelopes).pipe(
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
    Layer.provide(ApiLive),
    Layer.provide(NodeHttpServer.layer(createServer, { port: options.port, host: options.host })),
  )
