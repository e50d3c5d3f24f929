import { Effect, Schema } from "effect"
import { randomBytes, randomUUID } from "node:crypto"
import { lookup } from "node:dns/promises"
import { networkInterfaces } from "node:os"
import { Accounts } from "../actors/Accounts.js"
import { ActorClock } from "../actors/ActorClock.js"
import { isObject } from "../domain/json.js"
import { parseWebhookUrl, portOf } from "../domain/webhook/endpointUrl.js"
import { type WebhookEvent, WebhookEventName, webhookSubject } from "../domain/webhook/events.js"
import { EventLog, type LogUnavailable } from "../eventlog/EventLog.js"
import { LogHealth } from "../eventlog/LogHealth.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import { type DeliveryRow, type WebhookRow, webhookReads } from "../projections/webhookReads.js"
import { readJsonBody } from "./body.js"
import { badRequest, logUnavailable, notFound } from "./errors.js"
import { HttpSettings } from "./settings.js"

const ALL_EVENTS = WebhookEventName.literals
const isEventName = Schema.is(WebhookEventName)
const encoder = new TextEncoder()
const secs = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000))

const shown = (row: WebhookRow) => ({
  id: row.id,
  object: "webhook" as const,
  account_id: row.account_id,
  url: row.url,
  events: JSON.parse(row.events) as Array<WebhookEventName>,
  created_at: Math.floor(row.created_at / 1000),
})

const delivery = (d: DeliveryRow) => ({
  id: d.id,
  object: "webhook.delivery" as const,
  batch_id: d.batch_id,
  event: d.event,
  status: d.status,
  attempts: d.attempts,
  created_at: secs(d.created_at)!,
  last_attempt_at: secs(d.last_at),
  last_status: d.last_status,
  last_error: d.last_error,
  next_attempt_at: d.status === "pending" ? secs(d.next_at) : null,
})

/** Whether the address is one this machine answers on: a loopback or one of its interfaces'. */
const isOwnAddress = (address: string) => {
  if (address.startsWith("127.") || address === "::1" || address === "0.0.0.0" || address === "::") return true
  return Object.values(networkInterfaces()).some((list) => list?.some((i) => i.address === address))
}

const logDown = (e: LogUnavailable) => logUnavailable("The event log cannot be reached", e.message)

/** The admin API's webhook endpoints: created and deleted as events in the log, read from the projections. */
export class WebhookEndpoints extends Effect.Service<WebhookEndpoints>()("Http/WebhookEndpoints", {
  effect: Effect.gen(function* () {
    const settings = yield* HttpSettings
    const reads = webhookReads(yield* ReadModel)
    const log = yield* EventLog
    const projector = yield* Projector
    const accounts = yield* Accounts
    const health = yield* LogHealth
    const now = Effect.flatMap(ActorClock, (clock) => clock.currentTimeMillis)
    const reachable = Effect.suspend(() => {
      const why = health.unavailable()
      return why === undefined ? Effect.void : Effect.fail(logUnavailable("The event log cannot be reached", why))
    })
    const write = (event: WebhookEvent, subject: string) =>
      Effect.flatMap(
        log.append([{ subject, data: encoder.encode(JSON.stringify(event)), expectLastSubjectSeq: 0 }]).pipe(
          Effect.catchTag("WrongLastSequence", (e) => Effect.die(e)),
          Effect.mapError(logDown),
        ),
        ([written]) => projector.awaitSeq(written!.seq),
      )

    /** Refuses a URL that is not http(s), or that comes back to this instance (a delivery loop). */
    const checkedUrl = (text: unknown) =>
      Effect.gen(function* () {
        const parsed = parseWebhookUrl(text)
        if ("refused" in parsed) return yield* Effect.fail(badRequest(parsed.refused, "url"))
        const host = parsed.url.hostname.replace(/^\[|\]$/g, "")
        const addresses = yield* Effect.tryPromise(() => lookup(host, { all: true })).pipe(
          Effect.mapError(() => badRequest(`'url' names a host that does not resolve: '${host}'`, "url")),
        )
        if (settings.port !== undefined && portOf(parsed.url) === settings.port && addresses.some((a) => isOwnAddress(a.address))) {
          return yield* Effect.fail(badRequest("'url' resolves to this Sluice instance itself; a webhook must go elsewhere", "url"))
        }
        return parsed.url.toString()
      })

    /** A new endpoint of the account, with its signing secret: shown in this answer only. */
    const create = (accountId: string) =>
      Effect.gen(function* () {
        yield* reachable
        const account = accounts.get(accountId)
        if (account === undefined || account.status === "deleted") return yield* Effect.fail(notFound(`No account found with id '${accountId}'`))
        const body = yield* readJsonBody(64 * 1024)
        if (!isObject(body)) return yield* Effect.fail(badRequest("The request body must be a JSON object with 'url' and 'events'"))
        for (const name of Object.keys(body)) {
          if (name !== "url" && name !== "events") return yield* Effect.fail(badRequest(`Unknown field '${name}': a webhook takes 'url' and 'events'`, name))
        }
        const url = yield* checkedUrl(body["url"])
        const events = body["events"] ?? ALL_EVENTS
        if (!Array.isArray(events) || events.length === 0 || !events.every(isEventName)) {
          return yield* Effect.fail(badRequest(`'events' must be a non-empty array of ${ALL_EVENTS.join(", ")}`, "events"))
        }
        const id = `wh_${randomUUID().replaceAll("-", "").slice(0, 24)}`
        const secret = `whsec_${randomBytes(24).toString("base64")}`
        const at = yield* now
        const unique = [...new Set(events)]
        yield* write({ type: "webhook_created", webhook_id: id, account_id: accountId, url, events: unique, secret, at }, webhookSubject(id, "webhook_created"))
        return { ...shown(reads.one(id)!), secret }
      })

    const list = (accountId: string) =>
      Effect.gen(function* () {
        yield* reachable
        if (accounts.get(accountId) === undefined) return yield* Effect.fail(notFound(`No account found with id '${accountId}'`))
        return { object: "list" as const, data: reads.ofAccount(accountId).map(shown) }
      })

    const remove = (webhookId: string) =>
      Effect.gen(function* () {
        yield* reachable
        const row = reads.one(webhookId)
        if (row === undefined) return yield* Effect.fail(notFound(`No webhook found with id '${webhookId}'`))
        yield* write({ type: "webhook_deleted", webhook_id: row.id, account_id: row.account_id, at: yield* now }, webhookSubject(row.id, "webhook_deleted"))
        return { id: row.id, object: "webhook.deleted" as const, deleted: true as const }
      })

    /** The endpoint's latest deliveries, newest first, and how each went. */
    const deliveries = (webhookId: string) =>
      Effect.gen(function* () {
        yield* reachable
        if (reads.one(webhookId) === undefined) return yield* Effect.fail(notFound(`No webhook found with id '${webhookId}'`))
        return { object: "list" as const, data: reads.deliveries(webhookId).map(delivery) }
      })

    return { create, list, remove, deliveries } as const
  }),
}) {}
