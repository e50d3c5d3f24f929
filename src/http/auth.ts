import { HttpServerRequest } from "@effect/platform"
import { Effect, Option, Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { type Account, Accounts } from "../actors/Accounts.js"
import { ActorClock } from "../actors/ActorClock.js"
import { quotaUsedUp, quotaUsedUpMessage } from "../domain/account/ownerVerdict.js"
import { nextUtcMidnight, utcDay } from "../domain/account/utcDay.js"
import { priorityRefusal } from "../domain/account/priorityAllowance.js"
import type { Priority } from "../domain/scheduling/priority.js"
import { ReadModel } from "../projections/ReadModel.js"
import { usedUsd } from "../projections/usageReads.js"
import { apiKeyOf, bearerOf } from "./apiKey.js"
import { RetryLater, forbidden, quotaExhausted, unauthorized } from "./errors.js"
import { noteAccount } from "./observe.js"

/** The token of an `Authorization: Bearer` header, if the request sent one. */
export const sentBearer = (request: HttpServerRequest.HttpServerRequest) => bearerOf(request.headers)

/** Compares in constant time, so the admin token cannot be guessed a character at a time. */
export const sameSecret = (sent: string, expected: string) => {
  const a = createHash("sha256").update(sent).digest()
  const b = createHash("sha256").update(expected).digest()
  return timingSafeEqual(a, b)
}

/** While the account's daily quota is used up, every call made with its keys answers 429, reads included. */
const withinDailyQuota = (account: Account) =>
  Effect.gen(function* () {
    const quota = account.daily_quota_usd
    if (quota === null) return
    const now = yield* Effect.flatMap(ActorClock, (clock) => clock.currentTimeMillis)
    const used = usedUsd(yield* ReadModel, account.id, utcDay(now))
    if (quotaUsedUp(quota, used)) {
      const renews = nextUtcMidnight(now)
      return yield* Effect.fail(new RetryLater(quotaExhausted(quotaUsedUpMessage(quota, used, renews)), (renews - now) / 1000))
    }
  })

/** The caller's key, from `Authorization: Bearer` or `X-API-Key`, while its account has quota left. */
export const authenticate = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const secret = apiKeyOf(request.headers)
  if (secret === undefined) {
    return yield* Effect.fail(
      unauthorized("Missing API key: send it as 'Authorization: Bearer <key>' or in the 'X-API-Key' header"),
    )
  }
  const accounts = yield* Accounts
  const caller = yield* accounts.authenticate(secret).pipe(Effect.mapError((e) => unauthorized(e.message)))
  noteAccount(request, caller.account.id)
  yield* withinDailyQuota(caller.account)
  return caller
})

export type Caller = Effect.Effect.Success<typeof authenticate>

export const requireBatchAccess = <A extends { readonly account: { readonly tier: string } }>(caller: A) =>
  caller.account.tier === "internal"
    ? Effect.succeed(caller)
    : Effect.fail(forbidden("Batch inference is available to internal accounts only; this account may not create batches"))

/** A create (batch, response, stream) asking for more than the account's `max_priority` is refused, naming `priority`. */
export const requireAllowedPriority = (caller: { readonly account: { readonly max_priority: Priority } }, asked: Priority) => {
  const refused = priorityRefusal(asked, caller.account.max_priority)
  return refused === undefined ? Effect.void : Effect.fail(forbidden(refused, "priority"))
}

/** The admin API exists only when the operator configured a token. */
export const authenticateAdmin = (token: Option.Option<Redacted.Redacted<string>>) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const sent = sentBearer(request)
    if (Option.isNone(token) || sent === undefined || !sameSecret(sent, Redacted.value(token.value))) {
      return yield* Effect.fail(unauthorized("Invalid admin token"))
    }
  })
