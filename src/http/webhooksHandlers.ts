import { HttpApiBuilder } from "@effect/platform"
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
import { SluiceApi } from "./api.js"
import { authenticateAdmin } from "./auth.js"
import { readJsonBody } from "./body.js"
import { badRequest, logUnavailable, notFound } from "./errors.js"
import { respondJson } from "./respond.js"
import { HttpSettings } from "./settings.js"

const ALL_EVENTS = WebhookEventName.literals
const isEventName = Schema.is(WebhookEventName)
const encoder = new TextEncoder()
const secs = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000))

interface WebhookRow {
  readonly id: string
  readonly account_id: string
  readonly url: string
  readonly events: string
  readonly created_at: number
}

const shown = (row: WebhookRow) => ({
  id: row.id,
  object: "webhook" as const,
  account_id: row.account_id,
  url: row.url,
  events: JSON.parse(row.events) as Array<WebhookEventName>,
  created_at: Math.floor(row.created_at / 1000),
})

/** Whether the address is one this machine answers on: a loopback or one of its interfaces'. */
const isOwnAddress = (address: string) => {
  if (address.startsWith("127.") || address === "::1" || address === "0.0.0.0" || address === "::") return true
  return Object.values(networkInterfaces()).some((list) => list?.some((i) => i.address === address))
}

export const WebhooksLive = HttpApiBuilder.group(SluiceApi, "webhooks", (handlers) =>
  Effect.gen(function* () {
    const settings = yield* HttpSettings
    const db = yield* ReadModel
    const log = yield* EventLog
    const projector = yield* Projector
    const accounts = yield* Accounts
    const health = yield* LogHealth
    const now = Effect.flatMap(ActorClock, (clock) => clock.currentTimeMillis)
    const logDown = (e: LogUnavailable) => logUnavailable("The event log cannot be reached", e.message)
    const admin = Effect.zipRight(
      authenticateAdmin(settings.adminToken),
      Effect.suspend(() => {
        const why = health.unavailable()
        return why === undefined ? Effect.void : Effect.fail(logUnavailable("The event log cannot be reached", why))
      }),
    )
    const s = {
      one: db.prepare<[string], WebhookRow>(`SELECT id, account_id, url, events, created_at FROM webhooks WHERE id = ? AND deleted_at IS NULL`),
      ofAccount: db.prepare<[string], WebhookRow>(
        `SELECT id, account_id, url, events, created_at FROM webhooks WHERE account_id = ? AND deleted_at IS NULL ORDER BY created_at`,
      ),
      deliveries: db.prepare(`SELECT * FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at DESC, id LIMIT 100`),
    }
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

    return handlers
      .handleRaw("createWebhook", ({ path }) =>
        respondJson(
          Effect.gen(function* () {
            yield* admin
            const account = accounts.get(path.id)
            if (account === undefined || account.status === "deleted") return yield* Effect.fail(notFound(`No account found with id '${path.id}'`))
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
            yield* write(
              { type: "webhook_created", webhook_id: id, account_id: path.id, url, events: unique, secret, at },
              webhookSubject(id, "webhook_created"),
            )
            return { ...shown(s.one.get(id)!), secret }
          }),
        ),
      )
      .handleRaw("listWebhooks", ({ path }) =>
        respondJson(
          Effect.gen(function* () {
            yield* admin
            if (accounts.get(path.id) === undefined) return yield* Effect.fail(notFound(`No account found with id '${path.id}'`))
            return { object: "list" as const, data: s.ofAccount.all(path.id).map(shown) }
          }),
        ),
      )
      .handleRaw("deleteWebhook", ({ path }) =>
        respondJson(
          Effect.gen(function* () {
            yield* admin
            const row = s.one.get(path.id)
            if (row === undefined) return yield* Effect.fail(notFound(`No webhook found with id '${path.id}'`))
            yield* write(
              { type: "webhook_deleted", webhook_id: row.id, account_id: row.account_id, at: yield* now },
              webhookSubject(row.id, "webhook_deleted"),
            )
            return { id: row.id, object: "webhook.deleted" as const, deleted: true as const }
          }),
        ),
      )
      .handleRaw("webhookDeliveries", ({ path }) =>
        respondJson(
          Effect.gen(function* () {
            yield* admin
            if (s.one.get(path.id) === undefined) return yield* Effect.fail(notFound(`No webhook found with id '${path.id}'`))
            const rows = s.deliveries.all(path.id) as Array<{
              id: string
              batch_id: string
              event: WebhookEventName
              status: "pending" | "delivered" | "failed"
              attempts: number
              created_at: number
              last_at: number | null
              last_status: number | null
              last_error: string | null
              next_at: number | null
            }>
            return {
              object: "list" as const,
              data: rows.map((d) => ({
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
              })),
            }
          }),
        ),
      )
  }),
)
