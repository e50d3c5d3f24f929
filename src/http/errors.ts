import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { OpenAIErrorBody } from "../domain/api/index.js"

/** Every error this API answers has the OpenAI envelope for its body; its status is annotated here, and only here. */
const envelope = OpenAIErrorBody.fields

export class BadRequest extends Schema.Class<BadRequest>("BadRequest")(envelope, HttpApiSchema.annotations({ status: 400 })) {}
export class Unauthorized extends Schema.Class<Unauthorized>("Unauthorized")(envelope, HttpApiSchema.annotations({ status: 401 })) {}
export class Forbidden extends Schema.Class<Forbidden>("Forbidden")(envelope, HttpApiSchema.annotations({ status: 403 })) {}
export class NotFound extends Schema.Class<NotFound>("NotFound")(envelope, HttpApiSchema.annotations({ status: 404 })) {}
export class Conflict extends Schema.Class<Conflict>("Conflict")(envelope, HttpApiSchema.annotations({ status: 409 })) {}
export class Unprocessable extends Schema.Class<Unprocessable>("Unprocessable")(envelope, HttpApiSchema.annotations({ status: 422 })) {}
export class PayloadTooLarge extends Schema.Class<PayloadTooLarge>("PayloadTooLarge")(envelope, HttpApiSchema.annotations({ status: 413 })) {}
export class TooManyRequests extends Schema.Class<TooManyRequests>("TooManyRequests")(envelope, HttpApiSchema.annotations({ status: 429 })) {}
export class RequestTimeout extends Schema.Class<RequestTimeout>("RequestTimeout")(envelope, HttpApiSchema.annotations({ status: 408 })) {}
export class Unavailable extends Schema.Class<Unavailable>("Unavailable")(envelope, HttpApiSchema.annotations({ status: 503 })) {}

const detail = (message: string, type: string, param: string | null = null, code: string | null = null) => ({
  error: { message, type, param, code },
})

export const badRequest = (message: string, param: string | null = null, code: string | null = null) =>
  new BadRequest(detail(message, "invalid_request_error", param, code))
export const unauthorized = (message: string) => new Unauthorized(detail(message, "authentication_error", null, "invalid_api_key"))
export const forbidden = (message: string, param: string | null = null) => new Forbidden(detail(message, "permission_error", param, "forbidden"))
export const notFound = (message: string, code = "not_found") => new NotFound(detail(message, "invalid_request_error", null, code))
export const conflict = (message: string) => new Conflict(detail(message, "invalid_request_error", null, "conflict"))
export const unprocessable = (message: string, param: string | null = null) =>
  new Unprocessable(detail(message, "invalid_request_error", param, "idempotency_key_reused"))
export const payloadTooLarge = (message: string) =>
  new PayloadTooLarge(detail(message, "invalid_request_error", null, "payload_too_large"))
export const tooManyRequests = (message: string, code = "rate_limit_exceeded") =>
  new TooManyRequests(detail(message, "rate_limit_error", null, code))
/** OpenAI's own answer when an account has no quota left. */
export const quotaExhausted = (message: string) =>
  new TooManyRequests(detail(message, "insufficient_quota", null, "insufficient_quota"))
/** sference's answer to a flex request that could not start in time; OpenAI's clients retry a 408 themselves. */
export const flexTimedOut = (message: string) => new RequestTimeout(detail(message, "server_error", null, "flex_queue_timeout"))
export const unavailable = (message: string) => new Unavailable(detail(message, "server_error", null, "service_unavailable"))

/** An error answered as its envelope, with the status annotated on its class. */
export type Answered =
  | BadRequest
  | Unauthorized
  | Forbidden
  | NotFound
  | Conflict
  | Unprocessable
  | PayloadTooLarge
  | TooManyRequests
  | RequestTimeout
  | Unavailable

/** An error answered with `Retry-After`: the seconds after which the call may pass (never less than 1). */
export class RetryLater {
  readonly seconds: number
  constructor(
    readonly error: Answered,
    seconds: number,
  ) {
    this.seconds = Math.max(1, Math.ceil(seconds))
  }
}

export type ApiError = Answered | RetryLater

/** The status annotated on the error's class above: each error's class is its Schema. */
export const statusOf = (error: ApiError): number =>
  HttpApiSchema.getStatusError((error instanceof RetryLater ? error.error : error).constructor as unknown as Schema.Schema.All)

/** How soon a client should try again while the event log is unavailable: it comes back on its own, or not. */
export const LOG_RETRY_AFTER_SECONDS = 5

/**
 * The seed's answer for the batch endpoints while the event log cannot be reached: 404, "batch
 * inference is unavailable at the moment", and why.
 */
export const batchInferenceUnavailable = (why: string) =>
  new RetryLater(
    notFound(`Batch inference is unavailable at the moment: the event log cannot be reached (${why})`, "batch_inference_unavailable"),
    LOG_RETRY_AFTER_SECONDS,
  )

/** The other endpoints' answer while the event log cannot be reached. */
export const logUnavailable = (message: string, why: string) => new RetryLater(unavailable(`${message} (${why})`), LOG_RETRY_AFTER_SECONDS)

export const batchNotFound = (batchId: string) => notFound(`No batch found with id '${batchId}'`, "batch_not_found")

/** The seed's 404 for a batch that "was deleted": the message says so, and when. */
export const batchDeleted = (batchId: string, deletedAtMs: number, reason: "deleted" | "retention") =>
  notFound(
    `Batch '${batchId}' was deleted at ${new Date(deletedAtMs).toISOString().replace(/\.\d{3}Z$/, "Z")} (Unix ${Math.floor(deletedAtMs / 1000)})${
      reason === "retention" ? ", when its retention period ended" : ""
    }; its requests and results are gone`,
    "batch_deleted",
  )
