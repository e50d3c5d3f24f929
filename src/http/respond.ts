import { HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import type { BatchObject } from "../domain/api/BatchObject.js"
import { type ApiError, RetryLater, statusOf } from "./errors.js"

export type { ApiError }

/** An error's envelope with the status annotated on its class, and `Retry-After` when it has one. */
export const errorResponse = (error: ApiError) =>
  error instanceof RetryLater
    ? HttpServerResponse.unsafeJson({ error: error.error.error }, { status: statusOf(error), headers: { "retry-after": String(error.seconds) } })
    : HttpServerResponse.unsafeJson({ error: error.error }, { status: statusOf(error) })

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

/** For responses built whole (streams), or the error's envelope. */
export const respondRaw = <R>(effect: Effect.Effect<HttpServerResponse.HttpServerResponse, ApiError, R>) =>
  Effect.catchAll(effect, (error) => Effect.succeed(errorResponse(error)))

/** A created batch's object, marked `Idempotent-Replayed: true` when it answers an earlier create again. */
export const respondCreated = <R>(effect: Effect.Effect<{ readonly batch: BatchObject; readonly replayed: boolean }, ApiError, R>) =>
  effect.pipe(
    Effect.map(({ batch, replayed }) => HttpServerResponse.unsafeJson(batch, replayed ? { headers: { "idempotent-replayed": "true" } } : undefined)),
    Effect.catchAll((error) => Effect.succeed(errorResponse(error))),
  )
