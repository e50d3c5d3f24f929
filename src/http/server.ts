import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import { AdminLive } from "./adminHandlers.js"
import { SluiceApi } from "./api.js"
import { BatchesLive } from "./batchesHandlers.js"

const envelope = (status: number, message: string, type: string, code: string) =>
  HttpServerResponse.unsafeJson({ error: { message, type, param: null, code } }, { status })

const emptyErrors: Record<number, readonly [string, string, string]> = {
  404: ["No such endpoint", "invalid_request_error", "not_found"],
  405: ["Method not allowed", "invalid_request_error", "method_not_allowed"],
  500: ["The server failed to answer this request", "server_error", "internal_error"],
}

/**
 * Responses the platform makes itself (no route, a defect) have empty bodies; they get the OpenAI
 * envelope too. The platform sends a response before outer middleware sees it, hence a pre-response hook.
 */
const errorEnvelopes = (app: HttpApp.Default): HttpApp.Default =>
  HttpApp.withPreResponseHandler(app, (_request, response) => {
    const known = emptyErrors[response.status]
    return Effect.succeed(
      known !== undefined && response.body._tag === "Empty" ? envelope(response.status, ...known) : response,
    )
  })

export const ApiLive = HttpApiBuilder.api(SluiceApi).pipe(Layer.provide(BatchesLive), Layer.provide(AdminLive))

export const serverLayer = (options: { readonly port: number; readonly host: string }) =>
  HttpApiBuilder.serve(errorEnvelopes).pipe(
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
    Layer.provide(ApiLive),
    Layer.provide(NodeHttpServer.layer(createServer, { port: options.port, host: options.host })),
  )
