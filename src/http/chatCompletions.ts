import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest, NodeStream } from "@effect/platform-node"
import { Effect, Either, Exit, Stream } from "effect"
import type { Caller } from "../actors/Accounts.js"
import { InteractiveAccounting } from "../actors/interactiveAccounting.js"
import { type UpstreamAnswer, type UpstreamFailed, brokenOff, openUpstream, readAll } from "../actors/interactiveUpstream.js"
import { InteractiveLoad, ModelLoad } from "../actors/ModelLoad.js"
import { type ModelEntry, costUsd } from "../config/Catalog.js"
import { ModelCatalog } from "../config/ModelCatalog.js"
import { CreateMessage } from "../domain/batch/createMessages.js"
import { CHAT_ENDPOINT } from "../domain/batch/endpoint.js"
import { type ValidChat, upstreamChatBody, validateChatRequest } from "../domain/chat/chatRequest.js"
import { SseRelay } from "../domain/chat/SseRelay.js"
import { readJsonBody } from "./body.js"
import { echoOf } from "../domain/response/echo.js"
import { flexAsk, tierFields } from "../domain/response/flexTier.js"
import { flexChatAnswer, notStarted, shutDownFirst } from "./flexAnswer.js"
import { FlexRequests } from "./flexRequests.js"
import { LogHealth } from "../eventlog/LogHealth.js"
import { RetryLater, badRequest, logUnavailable, notFound, tooManyRequests } from "./errors.js"

const upstreamError = (failed: UpstreamFailed) =>
  HttpServerResponse.unsafeJson(
    { error: { message: failed.message, type: "server_error", param: null, code: failed.timedOut ? "timeout" : "upstream_error" } },
    { status: failed.timedOut ? 504 : 502 },
  )

// A slot frees when one of the account's requests ends, which nothing here can tell in advance.
const noFreeSlot = () =>
  new RetryLater(
    tooManyRequests(
      "Every concurrent-request slot of this account is in use (its running batch requests hold some); retry when one frees",
      "concurrency_limit_exceeded",
    ),
    1,
  )

/** The SSE event a client sees when the upstream breaks off mid-stream, in place of the rest of the answer. */
const streamError = (failed: UpstreamFailed) =>
  new TextEncoder().encode(
    `data: ${JSON.stringify({ error: { message: failed.message, type: "server_error", param: null, code: failed.timedOut ? "timeout" : "upstream_error" } })}\n\n`,
  )

/** The upstream's Retry-After; a 429 without one gets the shortest wait, as every 429 here carries one. */
const passedHeaders = (answer: UpstreamAnswer) => {
  const retryAfter = answer.headers["retry-after"]
  if (retryAfter !== undefined) return { "retry-after": retryAfter }
  return answer.status === 429 ? { "retry-after": "1" } : {}
}

const usageOf = (bytes: Buffer): unknown => {
  try {
    return (JSON.parse(bytes.toString("utf8")) as { usage?: unknown } | null)?.usage
  } catch {
    return undefined
  }
}

/** A request that named a tier other than flex was served as the default one, and its answer says so. */
const echoedTier = (bytes: Buffer, echo: boolean): Buffer => {
  if (!echo) return bytes
  try {
    const body = JSON.parse(bytes.toString("utf8")) as unknown
    if (typeof body !== "object" || body === null || Array.isArray(body)) return bytes
    return Buffer.from(JSON.stringify({ ...body, service_tier: "default" }))
  } catch {
    return bytes
  }
}

/** `POST /v1/chat/completions`: a caller's request passed to its model's upstream, in one of the account's slots. */
export class ChatCompletions extends Effect.Service<ChatCompletions>()("Http/ChatCompletions", {
  effect: Effect.gen(function* () {
    const catalog = yield* ModelCatalog
    const load = yield* ModelLoad
    const interactive = yield* InteractiveLoad
    const accounting = yield* InteractiveAccounting
    const health = yield* LogHealth
    const flex = yield* FlexRequests
    // An answer's cost counts toward the account's daily quota, which only the log can record.
    const reachable = Effect.suspend(() => {
      const why = health.unavailable()
      return why === undefined ? Effect.void : Effect.fail(logUnavailable("The event log cannot be reached, so the answer's cost could not be counted", why))
    })

    // An answer the upstream has finished costs the same whether or not its client stays for the end of it.
    const record = (caller: Caller, model: ModelEntry, usage: unknown) =>
      usage === undefined ? Effect.void : Effect.uninterruptible(accounting.record(caller.account.id, costUsd(model, usage)))

    /** The answer as it streams: each event passed on when complete; the cost counted once the upstream has ended. */
    const streamed = (caller: Caller, chat: ValidChat, model: ModelEntry, answer: UpstreamAnswer, end: () => void) => {
      const relay = new SseRelay(chat.wantsUsage)
      const events = NodeStream.fromReadable<UpstreamFailed, Uint8Array>(() => answer.body, () => brokenOff(answer.body)).pipe(
        Stream.mapConcat((bytes) => relay.push(bytes)),
        Stream.concat(Stream.suspend(() => Stream.fromIterable(relay.end()))),
        Stream.concat(Stream.execute(Effect.suspend(() => record(caller, model, relay.usage)))),
        Stream.catchAll((failed) => Stream.make(streamError(failed))),
        Stream.ensuring(Effect.sync(end)),
      )
      return HttpServerResponse.stream(events, {
        status: answer.status,
        contentType: answer.headers["content-type"] ?? "text/event-stream",
        headers: { "cache-control": "no-cache", ...passedHeaders(answer) },
      })
    }

    const whole = (caller: Caller, model: ModelEntry, answer: UpstreamAnswer, askedTier: boolean) =>
      Effect.gen(function* () {
        const bytes = echoedTier(yield* readAll(answer.body), askedTier && answer.status >= 200 && answer.status < 300)
        if (answer.status >= 200 && answer.status < 300) yield* record(caller, model, usageOf(bytes))
        return HttpServerResponse.uint8Array(bytes, {
          status: answer.status,
          contentType: answer.headers["content-type"] ?? "application/json",
          headers: passedHeaders(answer),
        })
      })

    /** One of the account's slots and the model's interactive load, both given back by the `end` it answers, once. */
    const takeSlot = (caller: Caller, model: ModelEntry) =>
      Effect.gen(function* () {
        yield* accounting.awaitRoom(caller.account.id)
        if (!accounting.tryAcquire(caller.account.id)) return yield* Effect.fail(noFreeSlot())
        const endLoad = interactive.begin(model)
        let ended = false
        const end = () => {
          if (ended) return
          ended = true
          endLoad()
          accounting.release(caller.account.id)
        }
        // The slot and the model's load end with the answer; at the latest when the client's connection closes.
        NodeHttpServerRequest.toServerResponse(yield* HttpServerRequest.HttpServerRequest).once("close", end)
        return end
      })

    const proxy = (caller: Caller, chat: ValidChat, model: ModelEntry) =>
      Effect.gen(function* () {
        const end = yield* takeSlot(caller, model)
        return yield* Effect.gen(function* () {
          const answer = yield* openUpstream(model, upstreamChatBody(chat, model.upstreamModel))
          load.observe(model, answer.status)
          const eventStream = String(answer.headers["content-type"] ?? "").startsWith("text/event-stream")
          if (chat.stream && answer.status === 200 && eventStream) return streamed(caller, chat, model, answer, end)
          return yield* whole(caller, model, answer, typeof chat.body["service_tier"] === "string").pipe(Effect.ensuring(Effect.sync(end)))
        }).pipe(
          Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : Effect.sync(end))),
          Effect.catchTag("UpstreamFailed", (failed) => Effect.succeed(upstreamError(failed))),
        )
      })

    const flexComplete = (caller: Caller, chat: ValidChat, maxWaitMs: number) =>
      Effect.gen(function* () {
        const body: Record<string, unknown> = {}
        for (const [key, value] of Object.entries(chat.body)) if (!tierFields.includes(key)) body[key] = value
        const ended = yield* flex.run(caller, { model: chat.model, chat: body, echo: echoOf({}) }, "/v1/chat/completions", maxWaitMs)
        if (ended._tag === "ShuttingDown") return yield* Effect.fail(shutDownFirst())
        if (ended._tag === "NotStarted") return yield* Effect.fail(notStarted(chat.model, maxWaitMs))
        return flexChatAnswer(ended.stored)
      })

    const complete = (caller: Caller) =>
      Effect.gen(function* () {
        yield* reachable
        const input = yield* readJsonBody()
        const allowed = caller.account.models
        const valid = validateChatRequest(input, (model) => catalog.has(model) && (allowed === null || allowed.includes(model)))
        if (Either.isLeft(valid)) {
          const rejected = valid.left
          return yield* Effect.fail(
            rejected._tag === "ModelNotFound" ? notFound(rejected.message, "model_not_found") : badRequest(rejected.message, rejected.param),
          )
        }
        const served = catalog.get(valid.right.model)!.endpoints
        if (!served.includes(CHAT_ENDPOINT))
          return yield* Effect.fail(badRequest(CreateMessage.modelServesOthers(valid.right.model, CHAT_ENDPOINT, served), "model"))
        const tier = flexAsk(input)
        if (tier._tag === "Refused") return yield* Effect.fail(badRequest(tier.message, tier.param))
        // Flex runs on batch slots, which only accounts with batch access may use; others are served at once.
        if (tier._tag === "Flex" && caller.account.tier === "internal") return yield* flexComplete(caller, valid.right, tier.maxWaitMs)
        return yield* proxy(caller, valid.right, catalog.get(valid.right.model)!)
      })

    /**
     * The whole answer to a chat body that does not stream, taken as `complete` takes one (the account's
     * slot, the model's interactive load, the cost of a 2xx toward the quota): for `POST /v1/responses`.
     */
    const answer = (caller: Caller, model: ModelEntry, payload: string) =>
      Effect.gen(function* () {
        const end = yield* takeSlot(caller, model)
        return yield* Effect.gen(function* () {
          const answered = yield* openUpstream(model, payload)
          load.observe(model, answered.status)
          const bytes = yield* readAll(answered.body)
          if (answered.status >= 200 && answered.status < 300) yield* record(caller, model, usageOf(bytes))
          return { status: answered.status, bytes }
        }).pipe(Effect.ensuring(Effect.sync(end)))
      })

    return { complete, answer, reachable } as const
  }),
}) {}
