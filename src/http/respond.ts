import { HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { BadRequest, Conflict, Forbidden, NotFound, PayloadTooLarge, TooManyRequests, Unauthorized, Unavailable } from "./errors.js"

export type ApiError = BadRequest | Unauthorized | Forbidden | NotFound | Conflict | PayloadTooLarge | TooManyRequests | Unavailable

export const statusOf = (error: ApiError): number => {
  if (error instanceof BadRequest) return 400
  if (error instanceof Unauthorized) return 401
  if (error instanceof Forbidden) return 403
  if (error instanceof NotFound) return 404
  if (error instanceof Conflict) return 409
  if (error instanceof PayloadTooLarge) return 413
  if (error instanceof TooManyRequests) return 429
  return 503
}

const errorResponse = (error: ApiError) =>
  HttpServerResponse.unsafeJson({ error: error.error }, { status: statusOf(error) })

/*
 * HttpApi picks an error's schema by shape, and every error here has the same envelope shape, so
 * it would answer them all with the first one's status. Handlers answer their own errors instead;
 * the error schemas on the endpoints still document each status in the OpenAPI spec.
 */
export const respondJson = <A, R>(effect: Effect.Effect<A, ApiError, R>) =>
  effect.pipe(
    Effect.map((body) => HttpServerResponse.unsafeJson(body)),
    Effect.catchAll((error) => Effect.succeed(errorResponse(error))),
  )

/** For bodies assembled as JSON text (result pages), sent without re-serializing. */
export const respondJsonText = <R>(effect: Effect.Effect<string, ApiError, R>) =>
  effect.pipe(
    Effect.map((text) => HttpServerResponse.text(text, { contentType: "application/json" })),
    Effect.catchAll((error) => Effect.succeed(errorResponse(error))),
  )
