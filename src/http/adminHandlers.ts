import { HttpApiBuilder } from "@effect/platform"
import { Effect, ParseResult, Schema } from "effect"
import { Accounts, type Account } from "../actors/Accounts.js"
import { CreateAccountPayload, CreateKeyPayload, UpdateAccountPayload } from "../domain/api/index.js"
import { SluiceApi } from "./api.js"
import { authenticateAdmin } from "./auth.js"
import { readJsonBody } from "./body.js"
import type { LogUnavailable } from "../eventlog/EventLog.js"
import { badRequest, conflict, logUnavailable, notFound } from "./errors.js"
import { respondJson } from "./respond.js"
import { HttpSettings } from "./settings.js"
import { LogHealth } from "../eventlog/LogHealth.js"
import { Dispatcher } from "../actors/Dispatcher.js"
import { InstanceId } from "../metrics/Metrics.js"

const ADMIN_BODY_BYTES = 1024 * 1024

const decodeBody = <A, I>(schema: Schema.Schema<A, I>) =>
  Effect.flatMap(readJsonBody(ADMIN_BODY_BYTES, { emptyIs: {} }), (input) =>
    Schema.decodeUnknown(schema, { onExcessProperty: "error" })(input).pipe(
      Effect.mapError((error) => badRequest(ParseResult.TreeFormatter.formatErrorSync(error))),
    ),
  )

const view = (account: Account) => ({ ...account, models: account.models === null ? null : [...account.models] })

export const AdminLive = HttpApiBuilder.group(SluiceApi, "admin", (handlers) =>
  Effect.gen(function* () {
    const accounts = yield* Accounts
    const settings = yield* HttpSettings
    const health = yield* LogHealth
    const logDown = (e: LogUnavailable) => logUnavailable("The event log cannot be reached", e.message)
    // Every admin call writes to the log: while it is known to be away, say so at once.
    const admin = Effect.zipRight(
      authenticateAdmin(settings.adminToken),
      Effect.suspend(() => {
        const why = health.unavailable()
        return why === undefined ? Effect.void : Effect.fail(logUnavailable("The event log cannot be reached", why))
      }),
    )
    return handlers
      .handleRaw("createAccount", () =>
        respondJson(Effect.gen(function* () {
          yield* admin
          const { id, ...rest } = yield* decodeBody(CreateAccountPayload)
          const account = yield* accounts.create(id, rest).pipe(
            Effect.catchTags({
              AccountConflict: (e) => Effect.fail(conflict(e.message)),
              LogUnavailable: (e) => Effect.fail(logDown(e)),
            }),
          )
          return view(account)
        })),
      )
      .handleRaw("updateAccount", ({ path }) =>
        respondJson(Effect.gen(function* () {
          yield* admin
          const patch = yield* decodeBody(UpdateAccountPayload)
          const account = yield* accounts.update(path.id, patch).pipe(
            Effect.catchTags({
              AccountNotFound: (e) => Effect.fail(notFound(e.message)),
              LogUnavailable: (e) => Effect.fail(logDown(e)),
            }),
          )
          return view(account)
        })),
      )
      .handleRaw("createKey", ({ path }) =>
        respondJson(Effect.gen(function* () {
          yield* admin
          const { expires_at } = yield* decodeBody(CreateKeyPayload)
          const created = yield* accounts.createKey(path.id, expires_at ?? null).pipe(
            Effect.catchTags({
              AccountNotFound: (e) => Effect.fail(notFound(e.message)),
              LogUnavailable: (e) => Effect.fail(logDown(e)),
            }),
          )
          return { ...created, expires_at: expires_at ?? null }
        })),
      )
      .handleRaw("revokeKey", ({ path }) =>
        respondJson(Effect.gen(function* () {
          yield* admin
          return yield* accounts.revokeKey(path.id).pipe(
            Effect.catchTags({
              AccountNotFound: (e) => Effect.fail(notFound(e.message)),
              LogUnavailable: (e) => Effect.fail(logDown(e)),
            }),
          )
        })),
      )
  }),
)

export const AdminModelsLive = HttpApiBuilder.group(SluiceApi, "adminModels", (handlers) =>
  Effect.gen(function* () {
    const dispatcher = yield* Dispatcher
    const instance = yield* InstanceId
    const admin = authenticateAdmin((yield* HttpSettings).adminToken)
    return handlers
      .handleRaw("leases", () =>
        respondJson(
          Effect.gen(function* () {
            yield* admin
            const data = dispatcher.leases().map((l) => ({
              model: l.model,
              owner: l.owner,
              since: l.since,
              renewed_at: l.renewedAt,
              next_renewal_at: l.nextRenewalAt ?? null,
              revision: l.revision,
            }))
            return { object: "list" as const, instance, data }
          }),
        ),
      )
      .handleRaw("models", () =>
      respondJson(
        Effect.gen(function* () {
          yield* admin
          const data = dispatcher.models().map((m) => {
            let queued = 0
            for (const n of m.queuedByAccount.values()) queued += n
            return {
              id: m.model,
              batch_concurrency: m.batchConcurrency,
              concurrency: m.concurrency,
              pushback: m.batchConcurrency - m.concurrency,
              slots_limit: m.slotsLimit,
              slots_in_use: m.slotsInUse,
              running: m.running,
              queued,
              queued_by_account: Object.fromEntries(m.queuedByAccount),
              interactive_in_flight: m.interactiveInFlight,
              lease_owner: m.leaseOwner,
            }
          })
          return { object: "list" as const, instance, data }
        }),
      ),
    )
  }),
)
