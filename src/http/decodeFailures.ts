import { HttpApi, HttpApiBuilder, HttpApiError, HttpServerRequest } from "@effect/platform"
import type { HttpApp } from "@effect/platform"
import { Effect, Either, Option, Schema } from "effect"
import { SluiceApi } from "./api.js"
import { invalidRequest, type RequestPart } from "./invalidRequest.js"
import { errorResponse } from "./respond.js"
import { routePattern } from "./routeTemplate.js"

type PartSchema = Option.Option<Schema.Schema.AnyNoContext>

interface Endpoint {
  readonly method: string
  readonly segments: ReadonlyArray<string>
  readonly pattern: RegExp
  readonly endpoint: { readonly pathSchema: PartSchema; readonly urlParamsSchema: PartSchema; readonly headersSchema: PartSchema }
}

const endpoints: ReadonlyArray<Endpoint> = (() => {
  const all: Array<Endpoint> = []
  HttpApi.reflect(SluiceApi, {
    onGroup: () => undefined,
    onEndpoint: ({ endpoint }) =>
      all.push({ method: endpoint.method, segments: endpoint.path.split("/"), pattern: routePattern(endpoint.path), endpoint: endpoint as unknown as Endpoint["endpoint"] }),
  })
  // As the router does: a literal segment wins over a parameter in the same place.
  return all.sort((a, b) => a.segments.filter((s) => s.startsWith(":")).length - b.segments.filter((s) => s.startsWith(":")).length)
})()

const pathParams = (segments: ReadonlyArray<string>, path: string) => {
  const given = path.split("/")
  const params: Record<string, string> = {}
  segments.forEach((segment, i) => {
    if (segment.startsWith(":")) params[segment.slice(1)] = decodeURIComponent(given[i] ?? "")
  })
  return params
}

/**
 * The platform decodes a request's path, query and headers before the handler runs and answers a
 * failure with its own body, the schema's whole tree, and only the formatted issues in it: the request
 * is decoded again here, part by part, so that the one formatter names the part and the field.
 */
const answer = (request: HttpServerRequest.HttpServerRequest, failure: HttpApiError.HttpApiDecodeError) => {
  const url = new URL(request.url, "http://sluice")
  const method = request.method === "HEAD" ? "GET" : request.method
  const found = endpoints.find((e) => e.method === method && e.pattern.test(url.pathname))
  if (found === undefined) return Effect.die(failure)
  const parts: ReadonlyArray<readonly [RequestPart, PartSchema, () => unknown]> = [
    ["path", found.endpoint.pathSchema, () => pathParams(found.segments, url.pathname)],
    ["query", found.endpoint.urlParamsSchema, () => HttpServerRequest.searchParamsFromURL(url)],
    ["headers", found.endpoint.headersSchema, () => request.headers],
  ]
  for (const [part, schema, input] of parts) {
    if (Option.isNone(schema)) continue
    const decoded = Schema.decodeUnknownEither(schema.value)(input())
    if (Either.isLeft(decoded)) return Effect.succeed(errorResponse(invalidRequest(part, request, decoded.left)))
  }
  // Nothing the client sent fails: the handler's own answer did not encode, which is the server's fault.
  return Effect.die(failure)
}

export const DecodeFailures = HttpApiBuilder.middleware(
  (app: HttpApp.Default) =>
    Effect.catchAll(app as HttpApp.Default<unknown>, (error) =>
      error instanceof HttpApiError.HttpApiDecodeError ? Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => answer(request, error)) : Effect.fail(error),
    ) as HttpApp.Default,
)
