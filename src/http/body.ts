import { HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect } from "effect"
import { MAX_BODY_BYTES } from "../domain/batch/createLimits.js"
import { BodyMessage } from "./bodyMessages.js"
import { badRequest, payloadTooLarge } from "./errors.js"

export { MAX_BODY_BYTES }

class TooLarge {}

const tooLarge = (limit: number) =>
  payloadTooLarge(`The request body is larger than the limit of ${limit} bytes (${limit / 1024 / 1024} MiB)`)

/**
 * Reads the body up to `limit` bytes. A body declared or found larger than the limit is refused as soon
 * as that is known, without holding more than the limit in memory. `shared` reads it into memory a worker
 * thread can be handed without a copy (a SharedArrayBuffer).
 */
export const readBodyBytes = (limit = MAX_BODY_BYTES, options: { readonly shared?: boolean } = {}) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const declared = Number(request.headers["content-length"] ?? Number.NaN)
    if (declared > limit) return yield* Effect.fail(tooLarge(limit))
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    const alloc = (size: number) => (options.shared === true ? Buffer.from(new SharedArrayBuffer(size)) : Buffer.allocUnsafe(size))
    // The body is copied once, into a buffer of its declared size when there is one: the chunks do not
    // outlive the read.
    return yield* Effect.async<Buffer, TooLarge | Error>((resume) => {
      let buffer = alloc(Number.isSafeInteger(declared) && declared >= 0 ? declared : 64 * 1024)
      let size = 0
      const onData = (chunk: Buffer) => {
        if (size + chunk.length > limit) {
          cleanup()
          // Stop reading; the rest of the body is discarded as the connection closes after the answer.
          incoming.pause()
          resume(Effect.fail(new TooLarge()))
          return
        }
        if (size + chunk.length > buffer.length) {
          const grown = alloc(Math.min(limit, Math.max(size + chunk.length, buffer.length * 2)))
          buffer.copy(grown, 0, 0, size)
          buffer = grown
        }
        chunk.copy(buffer, size)
        size += chunk.length
      }
      const onEnd = () => {
        cleanup()
        resume(Effect.succeed(buffer.subarray(0, size)))
      }
      const onError = (error: Error) => {
        cleanup()
        resume(Effect.fail(error))
      }
      const cleanup = () => {
        incoming.off("data", onData)
        incoming.off("end", onEnd)
        incoming.off("error", onError)
      }
      incoming.on("data", onData)
      incoming.on("end", onEnd)
      incoming.on("error", onError)
    }).pipe(
      Effect.catchAll((error) =>
        Effect.fail(error instanceof TooLarge ? tooLarge(limit) : badRequest("The request body could not be read")),
      ),
    )
  })

/** Reads the body up to `limit` bytes (`readBodyBytes`) and parses it as JSON, where it was read. */
export const readJsonBody = (
  limit = MAX_BODY_BYTES,
  options: { readonly emptyIs?: unknown } = {},
) =>
  Effect.gen(function* () {
    const bytes = yield* readBodyBytes(limit)
    const text = bytes.toString("utf8")
    if (text.length === 0) {
      if ("emptyIs" in options) return options.emptyIs
      return yield* Effect.fail(badRequest(BodyMessage.empty))
    }
    return yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () => badRequest(BodyMessage.notJson),
    })
  })
