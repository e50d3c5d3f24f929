import { Context, Data, Effect, Layer, Schedule } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { type AccountEvent, accountSubject } from "../domain/account/events.js"
import { EventLog, isOutcomeUnknown, type LogUnavailable } from "../eventlog/EventLog.js"
import { Projector } from "../projections/Projector.js"
import { type AccountRow, accountReads, type KeyRow } from "../projections/accountReads.js"
import { ReadModel } from "../projections/ReadModel.js"
import { DEFAULT_PRIORITY, type Priority } from "../domain/scheduling/priority.js"

export interface Account {
  readonly id: string
  readonly tier: "internal" | "standard"
  readonly status: "active" | "suspended" | "deleted"
  readonly daily_quota_usd: number | null
  readonly concurrency: number | null
  readonly models: ReadonlyArray<string> | null
  readonly max_priority: Priority
}

export interface Caller {
  readonly account: Account
  readonly keyId: string
}

export class Unauthenticated extends Data.TaggedError("Unauthenticated")<{ readonly message: string }> {}
export class AccountConflict extends Data.TaggedError("AccountConflict")<{ readonly message: string }> {}
export class AccountNotFound extends Data.TaggedError("AccountNotFound")<{ readonly message: string }> {}

export type AccountSettings = Partial<Pick<Account, "tier" | "daily_quota_usd" | "concurrency" | "models" | "status" | "max_priority">>

export interface AccountsShape {
  readonly authenticate: (secret: string) => Effect.Effect<Caller, Unauthenticated>
  readonly get: (id: string) => Account | undefined
  readonly create: (id: string, settings: AccountSettings) => Effect.Effect<Account, AccountConflict | LogUnavailable>
  readonly update: (id: string, settings: AccountSettings) => Effect.Effect<Account, AccountNotFound | LogUnavailable>
  readonly createKey: (
    accountId: string,
    expiresAt: number | null,
  ) => Effect.Effect<{ readonly id: string; readonly key: string }, AccountNotFound | LogUnavailable>
  readonly revokeKey: (keyId: string) => Effect.Effect<{ readonly id: string; readonly revoked: true }, AccountNotFound | LogUnavailable>
  /**
   * Counts an interactive request's cost toward the account's daily quota (the current UTC day);
   * a batch row's cost is counted from its own event. Answers once the usage is readable.
   */
  readonly recordUsage: (accountId: string, usd: number) => Effect.Effect<void, LogUnavailable>
  /** Makes sure an internal account holds this key: the operator's first key, idempotent across restarts. */
  readonly bootstrap: (secret: string) => Effect.Effect<void, LogUnavailable>
}

export class Accounts extends Context.Tag("Actors/Accounts")<Accounts, AccountsShape>() {}

export const sha256 = (secret: string) => createHash("sha256").update(secret).digest("hex")
const encoder = new TextEncoder()

const CALLERS_KEPT = 10_000

const toAccount = (row: AccountRow): Account => ({
  ...row,
  models: row.models === null ? null : JSON.parse(row.models),
  max_priority: row.max_priority ?? DEFAULT_PRIORITY,
})

export const Live = Layer.effect(
  Accounts,
  Effect.gen(function* () {
    const reads = accountReads(yield* ReadModel)
    const log = yield* EventLog
    const projector = yield* Projector
    // Captured at construction: key expiry follows the clock the service was built with, whoever calls it.
    const clock = yield* Effect.clock
    const get = (id: string) => {
      const row = reads.account(id)
      return row === undefined ? undefined : toAccount(row)
    }
    const write = (events: ReadonlyArray<AccountEvent>, msgIds?: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const written = yield* log
          .append(
            events.map((event, i) => ({
              subject: accountSubject(event.account_id, event.type),
              data: encoder.encode(JSON.stringify(event)),
              ...(msgIds?.[i] === undefined ? {} : { msgId: msgIds[i] }),
            })),
          )
          .pipe(Effect.catchTag("WrongLastSequence", (e) => Effect.die(e)))
        yield* projector.awaitSeq(Math.max(...written.map((w) => w.seq)))
      })

    // A key and its account as the read model held them at an accounts version: every request reads
    // them, and their two lookups were about 8 % of a read's CPU. Any change to accounts or keys
    // moves the version before it is readable (Projector's accountsVersion), so none is served stale.
    const callers = new Map<string, { readonly version: number; readonly key: KeyRow | undefined; readonly account: Account | undefined }>()
    const lookup = (sha: string) => {
      const version = projector.accountsVersion()
      const known = callers.get(sha)
      if (known !== undefined && known.version === version) return known
      const key = reads.keyBySecret(sha)
      const found = { version, key, account: key === undefined ? undefined : get(key.account_id) }
      if (callers.size >= CALLERS_KEPT) callers.clear()
      callers.set(sha, found)
      return found
    }

    const authenticate = (secret: string) =>
      Effect.gen(function* () {
        const { key, account } = lookup(sha256(secret))
        if (key === undefined) return yield* new Unauthenticated({ message: "Invalid API key" })
        if (key.revoked_at !== null) return yield* new Unauthenticated({ message: "This API key has been revoked" })
        const now = yield* clock.currentTimeMillis
        if (key.expires_at !== null && key.expires_at * 1000 <= now) {
          return yield* new Unauthenticated({ message: "This API key has expired" })
        }
        if (account === undefined || account.status !== "active") {
          return yield* new Unauthenticated({ message: `The account of this API key is ${account?.status ?? "deleted"}` })
        }
        return { account, keyId: key.id }
      })

    const create = (id: string, settings: AccountSettings) =>
      Effect.gen(function* () {
        if (get(id) !== undefined) return yield* new AccountConflict({ message: `Account '${id}' already exists` })
        yield* write([
          {
            type: "account_created",
            account_id: id,
            tier: settings.tier ?? "standard",
            daily_quota_usd: settings.daily_quota_usd ?? null,
            concurrency: settings.concurrency ?? null,
            models: settings.models ?? null,
            // Written only when raised, so that an account created as before is stored as before.
            ...(settings.max_priority === undefined || settings.max_priority === DEFAULT_PRIORITY ? {} : { max_priority: settings.max_priority }),
            at: yield* clock.currentTimeMillis,
          },
        ])
        return get(id)!
      })

    const update = (id: string, settings: AccountSettings) =>
      Effect.gen(function* () {
        if (get(id) === undefined) return yield* new AccountNotFound({ message: `Account '${id}' not found` })
        yield* write([{ type: "account_updated", account_id: id, ...settings, at: yield* clock.currentTimeMillis }])
        return get(id)!
      })

    const addKey = (accountId: string, keyId: string, secret: string, expiresAt: number | null, msgId?: string) =>
      Effect.gen(function* () {
        const event: AccountEvent = {
          type: "key_created",
          account_id: accountId,
          key_id: keyId,
          key_sha256: sha256(secret),
          expires_at: expiresAt,
          at: yield* clock.currentTimeMillis,
        }
        yield* write([event], msgId === undefined ? undefined : [msgId])
      })

    const createKey = (accountId: string, expiresAt: number | null) =>
      Effect.gen(function* () {
        if (get(accountId) === undefined) return yield* new AccountNotFound({ message: `Account '${accountId}' not found` })
        const id = `key_${randomBytes(8).toString("hex")}`
        const key = `sk-sluice-${randomBytes(24).toString("base64url")}`
        yield* addKey(accountId, id, key, expiresAt)
        return { id, key }
      })

    const revokeKey = (keyId: string) =>
      Effect.gen(function* () {
        const key = reads.key(keyId)
        if (key === undefined) return yield* new AccountNotFound({ message: `Key '${keyId}' not found` })
        yield* write([{ type: "key_revoked", account_id: key.account_id, key_id: keyId, at: yield* clock.currentTimeMillis }])
        return { id: keyId, revoked: true as const }
      })

    const recordUsage = (accountId: string, usd: number) =>
      Effect.gen(function* () {
        if (!(usd > 0)) return
        yield* write([{ type: "usage_recorded", account_id: accountId, usd, source: "interactive", at: yield* clock.currentTimeMillis }])
      })

    const bootstrap = (secret: string) =>
      Effect.gen(function* () {
        const accountId = "bootstrap"
        if (get(accountId) === undefined) {
          yield* write(
            [{ type: "account_created", account_id: accountId, tier: "internal", daily_quota_usd: null, concurrency: null, models: null, at: yield* clock.currentTimeMillis }],
            [`account:${accountId}:created`],
          )
        }
        if (reads.keyBySecret(sha256(secret)) === undefined) {
          const keyId = `key_${sha256(secret).slice(0, 16)}`
          yield* addKey(accountId, keyId, secret, null, `key:${keyId}:created`)
        }
      }).pipe(
        // Instances started together publish the same two messages at once; NATS answers all but one
        // "duplicate message id is in process". Both carry message ids, so sending again is stored once.
        Effect.retry({ while: isOutcomeUnknown, schedule: Schedule.intersect(Schedule.exponential("100 millis"), Schedule.recurs(8)) }),
      )

    return { authenticate, get, create, update, createKey, revokeKey, recordUsage, bootstrap }
  }),
)
