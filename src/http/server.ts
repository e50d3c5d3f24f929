import { HttpApiBuilder, HttpApiScalar, HttpApp, HttpMiddleware, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Deferred, Effect, Exit, FiberId, Layer } from "effect"
import { createServer } from "node:http"
import { InteractiveAccounting } from "../actors/interactiveAccounting.js"
import { AdminAccounts } from "./adminAccounts.js"
import { AdminLive, AdminModelsLive } from "./adminHandlers.js"
import { SluiceApi } from "./api.js"
import { BatchAccess } from "./batchAccess.js"
import { BatchCommands } from "./batchCommands.js"
import { BatchCreation } from "./batchCreation.js"
import { CreateBodies } from "./createBodies.js"
import { BatchesLive } from "./batchesHandlers.js"
import { BatchQueries } from "./batchQueries.js"
import { ChatCompletions } from "./chatCompletions.js"
import { ChatLive } from "./chatHandlers.js"
import { Responses } from "./responses.js"
import { ResponsesLive } from "./responsesHandlers.js"
import { ResponseEvents } from "./responseEvents.js"
import { ResponseEventsLive } from "./responseEventsHandlers.js"
import { QueuedResponses } from "./queuedResponses.js"
import { StoredResponsesLive } from "./storedResponsesHandlers.js"
import { Streams } from "./streams.js"
import { FlexRequests } from "./flexRequests.js"
import { StreamsLive } from "./streamsHandlers.js"
import { Files } from "./files.js"
import { FilesLive } from "./filesHandlers.js"
import { EventStreamsClosing } from "./eventsStreamClosing.js"
import { allowedMethods } from "./methods.js"
import { ConsolePages } from "./consolePages.js"
import { DecodeFailures } from "./decodeFailures.js"
import { AsyncApiPage } from "./asyncApiPage.js"
import { ModelList } from "./modelList.js"
import { ModelsLive } from "./modelsHandlers.js"
import { ModelStates } from "./modelStates.js"
import { WebhookEndpoints } from "./webhookEndpoints.js"
import { WebhooksLive } from "./webhooksHandlers.js"
import { SHUTDOWN_GRACE_MS, serverTimeouts } from "./connectionTimes.js"
import { heldUntilServed } from "./heldUntilServed.js"
import { observed } from "./observe.js"
import { OperationsLive } from "./operationsHandlers.js"
import { Probes } from "./probes.js"
import { routeTemplates } from "./routeTemplate.js"
import { Metrics } from "../metrics/Metrics.js"

const envelope = (status: number, message: string, type: string, code: string) =>
  HttpServerResponse.unsafeJson({ error: { message, type, param: null, code } }, { status })

const emptyErrors: Record<number, readonly [string, string, string]> = {
  404: ["No such endpoint", "invalid_request_error", "not_found"],
  405: ["Method not allowed", "invalid_request_error", "method_not_allowed"],
  500: ["The server failed to answer this request", "server_error", "internal_error"],
}

/** A known path asked with a method it does not take: 405 with the methods it does, not 404. */
const methodNotAllowed = (method: string, url: string) => {
  const allowed = allowedMethods(new URL(url, "http://localhost").pathname)
  if (allowed === undefined || allowed.includes(method)) return undefined
  return envelope(405, `Method ${method} is not allowed here; this path takes ${allowed.join(", ")}`, "invalid_request_error", "method_not_allowed").pipe(
    HttpServerResponse.setHeader("allow", allowed.join(", ")),
  )
}

/**
 * Responses the platform makes itself (no route, a defect) have empty bodies; they get the OpenAI
 * envelope too. The platform sends a response before outer middleware sees it, hence a pre-response hook.
 */
const errorEnvelopes = (app: HttpApp.Default): HttpApp.Default =>
  HttpApp.withPreResponseHandler(app, (request, response) => {
    const known = emptyErrors[response.status]
    if (known === undefined || response.body._tag !== "Empty") return Effect.succeed(response)
    if (response.status === 404) {
      const wrongMethod = methodNotAllowed(request.method, request.url)
      if (wrongMethod !== undefined) return Effect.succeed(wrongMethod)
    }
    return Effect.succeed(envelope(response.status, ...known))
  })

/** The services the batch endpoints delegate to, over one BatchAccess. */
const BatchServices = Layer.mergeAll(BatchCommands.Default, BatchQueries.Default).pipe(
  Layer.provide(Layer.merge(BatchCreation.Default.pipe(Layer.provide(Files.Default), Layer.provide(CreateBodies.Default)), Files.Default)),
  Layer.provide(BatchAccess.Default),
)

/** Responses that wait for a batch slot, and the streams that hold some of them: run as one-row batches. */
const Queued = Layer.mergeAll(QueuedResponses.Default, Streams.Default).pipe(Layer.provide(BatchAccess.Default))

/** Flex requests: answered synchronously, run as queued responses. */
const Flex = FlexRequests.Default.pipe(Layer.provide(Queued))

/** The interactive path chat completions and responses share: the account's slots, the models' load, the quota. */
const Interactive = ChatCompletions.Default.pipe(Layer.provide(InteractiveAccounting.fromAdmission), Layer.provide(Flex))

export const ApiLive = HttpApiBuilder.api(SluiceApi).pipe(
  Layer.provide(BatchesLive.pipe(Layer.provide(BatchServices))),
  Layer.provide(AdminLive.pipe(Layer.provide(AdminAccounts.Default), Layer.provide(BatchAccess.Default))),
  Layer.provide(AdminModelsLive.pipe(Layer.provide(ModelStates.Default))),
  Layer.provide(WebhooksLive.pipe(Layer.provide(WebhookEndpoints.Default))),
  Layer.provide(ModelsLive.pipe(Layer.provide(ModelList.Default))),
  Layer.provide(OperationsLive.pipe(Layer.provide(Probes.Default))),
  Layer.provide(ChatLive.pipe(Layer.provide(Interactive))),
  Layer.provide(ResponsesLive.pipe(Layer.provide(Responses.Default), Layer.provide(Interactive), Layer.provide(Queued), Layer.provide(Flex))),
  Layer.provide(StoredResponsesLive.pipe(Layer.provide(Queued))),
  Layer.provide(StreamsLive.pipe(Layer.provide(Queued))),
  Layer.provide(FilesLive.pipe(Layer.provide(Files.Default.pipe(Layer.provide(BatchAccess.Default))))),
  Layer.provide(ResponseEventsLive.pipe(Layer.provide(ResponseEvents.Default))),
)

const routeOf = routeTemplates(SluiceApi, ["/docs", "/openapi.json", "/asyncapi.json", "/console", "/"])

/** Browser clients of other origins, when the operator lists them (SLUICE_CORS_ORIGINS); none by default. */
const cors = (origins: ReadonlyArray<string>) =>
  origins.length === 0
    ? (app: HttpApp.Default) => app
    : HttpMiddleware.cors({
        allowedOrigins: origins,
        allowedHeaders: ["authorization", "x-api-key", "content-type", "last-event-id"],
        allowedMethods: ["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
        maxAge: 600,
      })

export const serverLayer = (options: {
  readonly port: number
  readonly host: string
  readonly corsOrigins?: ReadonlyArray<string>
  /** Listen on this Unix socket instead, for the HTTP fronts (src/http/front/fronts.ts) to hand requests on. */
  readonly socketPath?: string
}) => {
  const server = heldUntilServed(createServer(serverTimeouts))
  const streamsClosing = Deferred.unsafeMake<void>(FiberId.none)
  // Released before the server's own close, which waits for every open connection with no limit:
  // event streams end and idle keep-alive connections go at once, and a client that never finishes
  // its request is cut off after a grace period, so a shutdown always ends.
  const boundedClose = Layer.scopedDiscard(
    Effect.addFinalizer(() =>
      Effect.sync(() => {
        Deferred.unsafeDone(streamsClosing, Exit.void)
        server.closeIdleConnections()
        setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS).unref()
      }),
    ),
  )
  return boundedClose.pipe(
    Layer.provideMerge(
      Layer.unwrapEffect(
        Effect.map(Metrics, (metrics) =>
          HttpApiBuilder.serve((app) => cors(options.corsOrigins ?? [])(observed(metrics, routeOf)(errorEnvelopes(app)))),
        ),
      ).pipe(
        // Sluice exports no traces: the platform's span per request (its attributes, the URL parsed
        // for them, the headers redacted) was work for nobody on every read.
        HttpMiddleware.withTracerDisabledWhen(() => true),
        Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
        Layer.provide(DecodeFailures),
        Layer.provide(HttpApiScalar.layer({ path: "/docs", scalar: { withDefaultFonts: false } })),
        Layer.provide(ConsolePages),
        Layer.provide(AsyncApiPage),
        Layer.provide(ApiLive.pipe(Layer.provide(Layer.succeed(EventStreamsClosing, streamsClosing)))),
        Layer.provide(
          NodeHttpServer.layer(() => server, options.socketPath === undefined ? { port: options.port, host: options.host } : { path: options.socketPath }),
        ),
      ),
    ),
  )
}
