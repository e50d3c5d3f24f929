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
export class PayloadTooLarge extends Schema.Class<PayloadTooLarge>("PayloadTooLarge")(envelope, HttpApiSchema.annotations({ status: 413 })) {}
export class TooManyRequests extends Schema.Class<TooManyRequests>("TooManyRequests")(envelope, HttpApiSchema.annotations({ status: 429 })) {}
export class Unavailable extends Schema.Class<Unavailable>("Unavailable")(envelope, HttpApiSchema.annotations({ status: 503 })) {}

const detail = (message: string, type: string, param: string | null = null, code: string | null = null) => ({
  error: { message, type, param, code },
})

export const badRequest = (message: string, param: string | null = null, code: string | null = null) =>
  new BadRequest(detail(message, "invalid_request_error", param, code))
export const unauthorized = (message: string) => new Unauthorized(detail(message, "authentication_error", null, "invalid_api_key"))
export const forbidden = (message: string) => new Forbidden(detail(message, "permission_error", null, "forbidden"))
export const notFound = (message: string, code = "not_found") => new NotFound(detail(message, "invalid_request_error", null, code))
export const conflict = (message: string) => new Conflict(detail(message, "invalid_request_error", null, "conflict"))
export const payloadTooLarge = (message: string) =>
  new PayloadTooLarge(detail(message, "invalid_request_error", null, "payload_too_large"))
export const tooManyRequests = (message: string, code = "rate_limit_exceeded") =>
  new TooManyRequests(detail(message, "rate_limit_error", null, code))
/** OpenAI's own answer when an account has no quota left. */
export const quotaExhausted = (message: string) =>
  new TooManyRequests(detail(message, "insufficient_quota", null, "insufficient_quota"))
export const unavailable = (message: string) => new Unavailable(detail(message, "server_error", null, "service_unavailable"))

export type ApiError = BadRequest | Unauthorized | Forbidden | NotFound | Conflict | PayloadTooLarge | TooManyRequests | Unavailable

/** The status annotated on the error's class above: each error's class is its Schema. */
export const statusOf = (error: ApiError): number =>
  HttpApiSchema.getStatusError(error.constructor as unknown as Schema.Schema.All)

export const batchNotFound = (batchId: string) => notFound(`No batch found with id '${batchId}'`, "batch_not_found")
