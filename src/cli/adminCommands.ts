import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { Priorities, type Priority } from "../domain/scheduling/priority.js"
import { choiceOption } from "./choiceOption.js"
import { adminClient } from "./clients.js"
import { group, leaf } from "./commandTree.js"
import { fail, sdk } from "./failure.js"
import { out } from "./output.js"

const adminToken = Options.text("admin-token").pipe(
  Options.withDescription("The server's SLUICE_ADMIN_TOKEN (default: that environment variable)"),
  Options.optional,
)

const limit = (name: string, description: string) =>
  Options.text(name).pipe(Options.withDescription(`${description}; "none" for no limit`), Options.optional)

/** `none` clears a limit (null); a number sets it. */
const parseLimit = (name: string, text: Option.Option<string>) =>
  Option.match(text, {
    onNone: () => Effect.succeed({}),
    onSome: (t) => {
      if (t === "none") return Effect.succeed({ [name]: null })
      const n = Number(t)
      return t.trim() !== "" && Number.isFinite(n) ? Effect.succeed({ [name]: n }) : fail(`--${name.replaceAll("_", "-")} takes a number or "none", not '${t}'`)
    },
  })

const settings = {
  tier: Options.choice("tier", ["internal", "standard"]).pipe(
    Options.withDescription("internal accounts may create batches"),
    Options.optional,
  ),
  dailyQuotaUsd: limit("daily-quota-usd", "USD per UTC day"),
  concurrency: limit("concurrency", "Requests at once, batch rows and interactive together"),
  models: Options.text("models").pipe(
    Options.withDescription('Comma-separated model ids the account may use; "all" for every model'),
    Options.optional,
  ),
  maxPriority: choiceOption("max-priority", Priorities).pipe(
    Options.withDescription("The highest --priority its batches, responses and streams may ask for (default standard)"),
    Options.optional,
  ),
}

type Settings = {
  readonly tier: Option.Option<"internal" | "standard">
  readonly dailyQuotaUsd: Option.Option<string>
  readonly concurrency: Option.Option<string>
  readonly models: Option.Option<string>
  readonly maxPriority: Option.Option<Priority>
}

const payload = (s: Settings) =>
  Effect.gen(function* () {
    const quota = yield* parseLimit("daily_quota_usd", s.dailyQuotaUsd)
    const concurrency = yield* parseLimit("concurrency", s.concurrency)
    return {
      ...Option.match(s.tier, { onNone: () => ({}), onSome: (tier) => ({ tier }) }),
      ...quota,
      ...concurrency,
      ...Option.match(s.models, {
        onNone: () => ({}),
        onSome: (models) => ({ models: models === "all" ? null : models.split(",").map((m) => m.trim()).filter((m) => m !== "") }),
      }),
      ...Option.match(s.maxPriority, { onNone: () => ({}), onSome: (max_priority) => ({ max_priority }) }),
    }
  })

const createAccount = leaf(
  "Create an account",
  Command.make(
  "create",
  { adminToken, id: Options.text("id").pipe(Options.withDescription("The account id: letters, digits, _ and -")), ...settings },
  ({ adminToken, id, ...s }) =>
    Effect.gen(function* () {
      const admin = yield* adminClient(adminToken)
      const settings = yield* payload(s)
      yield* out(JSON.stringify(yield* sdk(() => admin.accounts.create({ id, ...settings }))))
    }),
  ),
)

const updateAccount = leaf(
  "Change an account's tier, limits, models, max priority or status",
  Command.make(
  "update",
  {
    adminToken,
    id: Options.text("id"),
    status: Options.choice("status", ["active", "suspended", "deleted"]).pipe(
      Options.withDescription("suspended: its keys answer 401; deleted ends the account"),
      Options.optional,
    ),
    ...settings,
  },
  ({ adminToken, id, status, ...s }) =>
    Effect.gen(function* () {
      const admin = yield* adminClient(adminToken)
      const patch = { ...(yield* payload(s)), ...Option.match(status, { onNone: () => ({}), onSome: (status) => ({ status }) }) }
      yield* out(JSON.stringify(yield* sdk(() => admin.accounts.update(id, patch))))
    }),
  ),
)

const createKey = leaf(
  "Create a key; its secret is printed once",
  Command.make(
  "create",
  {
    adminToken,
    accountId: Options.text("account-id"),
    expiresAt: Options.integer("expires-at").pipe(Options.withDescription("Unix seconds"), Options.optional),
  },
  ({ adminToken, accountId, expiresAt }) =>
    Effect.gen(function* () {
      const admin = yield* adminClient(adminToken)
      const input = Option.match(expiresAt, { onNone: () => ({}), onSome: (expires_at) => ({ expires_at }) })
      yield* out(JSON.stringify(yield* sdk(() => admin.keys.create(accountId, input))))
    }),
  ),
)

const revokeKey = leaf(
  "Revoke a key: calls made with it answer 401 from then on",
  Command.make("revoke", { adminToken, keyId: Options.text("key-id") }, ({ adminToken, keyId }) =>
    Effect.gen(function* () {
      const admin = yield* adminClient(adminToken)
      yield* out(JSON.stringify(yield* sdk(() => admin.keys.revoke(keyId))))
    }),
  ),
)

const leases = leaf(
  "Which instance owns each model's slots, since when, and its next renewal",
  Command.make("leases", { adminToken, json: Options.boolean("json").pipe(Options.withDescription("print the answer as JSON")) }, ({ adminToken, json }) =>
    Effect.gen(function* () {
      const admin = yield* adminClient(adminToken)
      const answer = yield* sdk(() => admin.leases())
      if (json) return yield* out(JSON.stringify(answer))
      const when = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString())
      const lines = answer.data.map((l) => `${l.model}\t${l.owner}\tsince ${when(l.since)}\tnext renewal ${when(l.next_renewal_at)}\trevision ${l.revision}`)
      yield* out(lines.length === 0 ? "no model is leased yet" : lines.join("\n"))
    }),
  ),
)

const account = group("account", "Create an account or change it (tier, limits, models, status)", [createAccount.node, updateAccount.node])
const key = group("key", "Create an account's API key, or revoke one", [createKey.node, revokeKey.node])
const admin = group("admin", "Accounts, keys and model leases, over the admin API (needs the server's SLUICE_ADMIN_TOKEN)", [
  account.node,
  key.node,
  leases.node,
])

export const adminNode = admin.node
export const adminCommand = admin.own.pipe(
  Command.withSubcommands([
    account.own.pipe(Command.withSubcommands([createAccount.command, updateAccount.command])),
    key.own.pipe(Command.withSubcommands([createKey.command, revokeKey.command])),
    leases.command,
  ]),
)
