import { Effect, Either } from "effect"
import { randomUUID } from "node:crypto"
import type { Caller } from "../actors/Accounts.js"
import { ActorClock } from "../actors/ActorClock.js"
import { ModelCatalog } from "../config/ModelCatalog.js"
import { CreateMessage } from "../domain/batch/createMessages.js"
import { type UpstreamReply, responseFrom } from "../domain/response/fromCompletion.js"
import { type ValidResponseRequest, validateResponseRequest } from "../domain/response/validateRequest.js"
import { readJsonBody } from "./body.js"
import { ChatCompletions } from "./chatCompletions.js"
import { badRequest, conflict, notFound } from "./errors.js"
import { requireAllowedPriority, requireBatchAccess } from "./auth.js"
import { type ResponseRoute, responsePriority } from "../domain/response/queuedPriority.js"
import { DEFAULT_PRIORITY } from "../domain/scheduling/priority.js"
import { QueuedResponses, responseObjectOf } from "./queuedResponses.js"
import { FlexRequests } from "./flexRequests.js"
import { notStarted, shutDownFirst } from "./flexAnswer.js"
import { flexAsk } from "../domain/response/flexTier.js"
import { Streams, streamNotFound } from "./streams.js"
import { joinRefusal } from "../domain/stream/decide.js"
import { type StreamWindow, windowMs } from "../domain/stream/events.js"

const newId = (prefix: string) => `${prefix}_${randomUUID().replaceAll("-", "")}`

const parsed = (bytes: Buffer): unknown => {
  try {
    return JSON.parse(bytes.toString("utf8"))
  } catch {
    return undefined
  }
}

/**
 * `POST /v1/responses`: a Responses request converted to a chat completion and answered on the
 * interactive path, blocking until the upstream answers; what it answers becomes the Response object.
 */
export class Responses extends Effect.Service<Responses>()("Http/Responses", {
  effect: Effect.gen(function* () {
    const catalog = yield* ModelCatalog
    const chat = yield* ChatCompletions
    const clock = yield* ActorClock
    const queued = yield* QueuedResponses
    const flex = yield* FlexRequests
    const streams = yield* Streams
    const seconds = Effect.map(clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))

    const queuedDefaults = { serviceTier: "default", streamId: null, customId: null, endpoint: "/v1/responses" } as const

    /** The priority the request runs at, within what the account may use. */
    const runsAt = (caller: Caller, request: ValidResponseRequest, route: ResponseRoute) => {
      const decided = responsePriority(request.priority, route)
      return decided._tag === "Refused"
        ? Effect.fail(badRequest(decided.message, "priority"))
        : Effect.as(requireAllowedPriority(caller, decided.priority), decided.priority)
    }

    /** An item of a stream is queued whatever `background` says, with the stream's window to start in. */
    const inStream = (caller: Caller, request: ValidResponseRequest, streamId: string, background: boolean) =>
      Effect.gen(function* () {
        yield* requireBatchAccess(caller)
        const stream = streams.standing(caller, streamId)
        if (stream === undefined) return yield* Effect.fail(streamNotFound(streamId))
        const refused = joinRefusal({ id: stream.id, accountId: stream.account_id, status: stream.status })
        if (refused !== undefined) return yield* Effect.fail(conflict(refused))
        const priority = yield* runsAt(caller, request, { _tag: "StreamItem", streamPriority: stream.priority ?? DEFAULT_PRIORITY })
        return yield* queued.queue(caller, request, {
          ...queuedDefaults,
          background,
          streamId,
          customId: request.echo.metadata["custom_id"] ?? null,
          windowMs: windowMs[stream.window as StreamWindow],
          priority,
        })
      })

    const create = (caller: Caller) =>
      Effect.gen(function* () {
        yield* chat.reachable
        const createdAt = yield* seconds
        const input = yield* readJsonBody()
        const allowed = caller.account.models
        const valid = validateResponseRequest(input, (model) => catalog.has(model) && (allowed === null || allowed.includes(model)))
        if (Either.isLeft(valid)) {
          const rejected = valid.left
          return yield* Effect.fail(
            rejected._tag === "ModelNotFound" ? notFound(rejected.message, "model_not_found") : badRequest(rejected.message, rejected.param),
          )
        }
        const request = valid.right
        const served = catalog.get(request.model)!.endpoints
        if (!served.includes("/v1/responses"))
          return yield* Effect.fail(badRequest(CreateMessage.modelServesOthers(request.model, "/v1/responses", served), "model"))
        const tier = flexAsk(input)
        if (tier._tag === "Refused") return yield* Effect.fail(badRequest(tier.message, tier.param))
        const streamId = request.echo.metadata["stream_id"]
        if (streamId !== undefined) return yield* inStream(caller, request, streamId, (input as Record<string, unknown>)["background"] === true)
        if ((input as Record<string, unknown>)["background"] === true) {
          yield* requireBatchAccess(caller)
          const priority = yield* runsAt(caller, request, { _tag: "Background" })
          return yield* queued.queue(caller, request, { ...queuedDefaults, background: true, windowMs: queued.windowMs, priority })
        }
        const flexes = tier._tag === "Flex" && caller.account.tier === "internal"
        yield* runsAt(caller, request, { _tag: flexes ? "Flex" : "Interactive" })
        if (flexes) {
          const ended = yield* flex.run(caller, request, "/v1/responses", tier.maxWaitMs)
          if (ended._tag === "ShuttingDown") return yield* Effect.fail(shutDownFirst())
        if (ended._tag === "NotStarted") return yield* Effect.fail(notStarted(request.model, tier.maxWaitMs))
          return responseObjectOf(ended.stored)
        }
        const model = catalog.get(request.model)!
        const reply: UpstreamReply = yield* chat.answer(caller, model, JSON.stringify({ ...request.chat, model: model.upstreamModel })).pipe(
          Effect.map(({ status, bytes }): UpstreamReply => ({ _tag: "Answered", status, body: parsed(bytes) })),
          Effect.catchTag("UpstreamFailed", (failed) => Effect.succeed<UpstreamReply>({ _tag: "NoAnswer", message: failed.message })),
        )
        return responseFrom(reply, {
          id: newId("resp"),
          model: request.model,
          createdAt,
          completedAt: yield* seconds,
          serviceTier: "default",
          echo: request.echo,
          newId,
        })
      })

    return { create } as const
  }),
}) {}
