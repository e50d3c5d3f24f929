import { Effect, Either } from "effect"
import { randomUUID } from "node:crypto"
import type { Caller } from "../actors/Accounts.js"
import { ActorClock } from "../actors/ActorClock.js"
import { ModelCatalog } from "../config/ModelCatalog.js"
import { type UpstreamReply, responseFrom } from "../domain/response/fromCompletion.js"
import { validateResponseRequest } from "../domain/response/validateRequest.js"
import { readJsonBody } from "./body.js"
import { ChatCompletions } from "./chatCompletions.js"
import { badRequest, notFound } from "./errors.js"

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
    const seconds = Effect.map(clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))

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
