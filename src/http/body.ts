import { HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect } from "effect"
import { MAX_BODY_BYTES } from "../domain/batch/createLimits.js"
import { badRequest, payloadTooLarge } from "./errors.js"

export { MAX_BODY_BYTES }

class TooLarge {}

const tooLarge = (limit: number) =>
  payloadTooLarge(`The request body is larger than the limit of ${limit} bytes (${limit / 1024 / 1024} MiB)`)

/**
 * Reads the body up to `limit` bytes and parses it as JSON. A body declared or found larger than
 * the limit is refused as soon as that is known, without holding more than the limit in memory.
 */
export const readJsonBody = (
  limit = MAX_BODY_BYTES,
  options: { readonly emptyIs?: unknown; readonly read?: (text: string) => void } = {},
) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const declared = Number(request.headers["content-length"] ?? Number.NaN)
    if (declared > limit) return yield* Effect.fail(tooLarge(limit))
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    // The body is copied once, into a buffer of its declared size when there is one, and parsed where it
    // was read: neither the chunks nor the bytes outlive the parse.
    const text = yield* Effect.async<string, TooLarge | Error>((resume) => {
      let buffer = Buffer.allocUnsafe(Number.isSafeInteger(declared) && declared >= 0 ? declared : 64 * 1024)
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
          const grown = Buffer.allocUnsafe(Math.min(limit, Math.max(size + chunk.length, buffer.length * 2)))
          buffer.copy(grown, 0, 0, size)
          buffer = grown
        }
        chunk.copy(buffer, size)
        size += chunk.length
      }
      const onEnd = () => {
        cleanup()
        resume(Effect.succeed(buffer.toString("utf8", 0, size)))
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
    })
      .pipe(
        Effect.catchAll((error) =>
          Effect.fail(error instanceof TooLarge ? tooLarge(limit) : badRequest("The request body could not be read")),
        ),
      )
    options.read?.(text)
    if (text.length === 0) {
      if ("emptyIs" in options) return options.emptyIs
      return yield* Effect.fail(badRequest("The request body is empty: expected a JSON object"))
    }
    return yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () => badRequest("The request body is not valid JSON"),
    })
  })
