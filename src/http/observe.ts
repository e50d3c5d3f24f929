import { HttpServerError, HttpServerRequest } from "@effect/platform"
import type { HttpApp } from "@effect/platform"
import { Effect, Exit } from "effect"
import type { MetricsShape } from "../metrics/Metrics.js"

/** The account a request was authenticated as, told by `authenticate`, for the request's log line. */
const accounts = new WeakMap<object, string>()
export const noteAccount = (request: HttpServerRequest.HttpServerRequest, accountId: string) => {
  accounts.set(request.source as object, accountId)
}

const batchInPath = /^\/v1\/batches\/(batch_[A-Za-z0-9]+)/

/** Times every request into the request metrics by its route template, and logs one line for it. */
export const observed =
  (metrics: MetricsShape, routeOf: (method: string, path: string) => string) =>
  (app: HttpApp.Default): HttpApp.Default =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const started = performance.now()
      const record = (status: number) => {
        const path = new URL(request.url, "http://sluice").pathname
        const route = routeOf(request.method, path)
        const seconds = (performance.now() - started) / 1000
        metrics.httpRequest(request.method, route, status, seconds)
        const batchId = batchInPath.exec(path)?.[1]
        return Effect.logInfo(`${request.method} ${path} ${status}`).pipe(
          Effect.annotateLogs({
            method: request.method,
            route,
            status,
            ms: Math.round(seconds * 10_000) / 10,
            ...(batchId === undefined ? {} : { batch_id: batchId }),
            ...(accounts.has(request.source as object) ? { account: accounts.get(request.source as object)! } : {}),
          }),
        )
      }
      // A request that failed has the status the platform answers it with: 499 for a client that went
      // away, 503 for a server that stopped.
      return Effect.onExit(app, (exit) =>
        Exit.isSuccess(exit)
          ? record(exit.value.status)
          : Effect.flatMap(HttpServerError.causeResponse(exit.cause), ([response]) => record(response.status)),
      )
    })
