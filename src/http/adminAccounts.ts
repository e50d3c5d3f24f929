import { HttpServerRequest } from "@effect/platform"
import { Effect, Schema } from "effect"
import { type Account, Accounts } from "../actors/Accounts.js"
import { CreateAccountPayload, CreateKeyPayload, UpdateAccountPayload } from "../domain/api/index.js"
import type { LogUnavailable } from "../eventlog/EventLog.js"
import { LogHealth } from "../eventlog/LogHealth.js"
import { readJsonBody } from "./body.js"
import { conflict, logUnavailable, notFound } from "./errors.js"
import { invalidRequest } from "./invalidRequest.js"

const ADMIN_BODY_BYTES = 1024 * 1024

const decodeBody = <A, I>(schema: Schema.Schema<A, I>) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const input = yield* readJsonBody(ADMIN_BODY_BYTES, { emptyIs: {} })
    return yield* Schema.decodeUnknown(schema, { onExcessProperty: "error" })(input).pipe(
      Effect.mapError((error) => invalidRequest("body", request, error)),
    )
  })

const view = (account: Account) => ({ ...account, models: account.models === null ? null : [...account.models] })

const logDown = (e: LogUnavailable) => logUnavailable("The event log cannot be reached", e.message)

/** The admin API's accounts and keys: each call decodes its body and writes through the Accounts actor. */
export class AdminAccounts extends Effect.Service<AdminAccounts>()("Http/AdminAccounts", {
  effect: Effect.gen(function* () {
    const accounts = yield* Accounts
    const health = yield* LogHealth
    // Every admin call writes to the log: while it is known to be away, say so at once.
    const reachable = Effect.suspend(() => {
      const why = health.unavailable()
      return why === undefined ? Effect.void : Effect.fail(logUnavailable("The event log cannot be reached", why))
    })

    const createAccount = Effect.gen(function* () {
      yield* reachable
      const { id, ...rest } = yield* decodeBody(CreateAccountPayload)
      const account = yield* accounts.create(id, rest).pipe(
        Effect.catchTags({
          AccountConflict: (e) => Effect.fail(conflict(e.message)),
          LogUnavailable: (e) => Effect.fail(logDown(e)),
        }),
      )
      return view(account)
    })

    const updateAccount = (accountId: string) =>
      Effect.gen(function* () {
        yield* reachable
        const patch = yield* decodeBody(UpdateAccountPayload)
        const account = yield* accounts.update(accountId, patch).pipe(
          Effect.catchTags({
            AccountNotFound: (e) => Effect.fail(notFound(e.message)),
            LogUnavailable: (e) => Effect.fail(logDown(e)),
          }),
        )
        return view(account)
      })

    const createKey = (accountId: string) =>
      Effect.gen(function* () {
        yield* reachable
        const { expires_at } = yield* decodeBody(CreateKeyPayload)
        const created = yield* accounts.createKey(accountId, expires_at ?? null).pipe(
          Effect.catchTags({
            AccountNotFound: (e) => Effect.fail(notFound(e.message)),
            LogUnavailable: (e) => Effect.fail(logDown(e)),
          }),
        )
        return { ...created, expires_at: expires_at ?? null }
      })

    const revokeKey = (keyId: string) =>
      Effect.zipRight(
        reachable,
        accounts.revokeKey(keyId).pipe(
          Effect.catchTags({
            AccountNotFound: (e) => Effect.fail(notFound(e.message)),
            LogUnavailable: (e) => Effect.fail(logDown(e)),
          }),
        ),
      )

    return { reachable, createAccount, updateAccount, createKey, revokeKey } as const
  }),
}) {}
