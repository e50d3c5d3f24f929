import { Clock, Duration, Effect, FiberSet, Layer } from "effect"
import { Webhook } from "standardwebhooks"
import { FinalBatchStatuses } from "../domain/api/BatchStatus.js"
import { nextAttemptAt } from "../domain/webhook/retry.js"
import { type WebhookEvent, webhookSubject } from "../domain/webhook/events.js"
import { EventLog } from "../eventlog/EventLog.js"
import { Metrics } from "../metrics/Metrics.js"
import { batchReads, toBatchObject } from "../projections/batchReads.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import { type DueDelivery, webhookReads } from "../projections/webhookReads.js"

const LOOK_EVERY = Duration.millis(250)
const ATTEMPT_TIMEOUT_MS = 10_000

const encoder = new TextEncoder()

/**
 * Delivers the webhook deliveries the projections say are owed, at least once: each attempt is
 * recorded in the log before the next is planned, so a restart resumes with the attempt after the
 * last one recorded (an attempt cut short by a crash is made again, with the same `webhook-id`).
 * Each delivery runs on its own fiber, so a slow endpoint holds up none of the others. Backoff runs
 * on the actors' clock; the signature's timestamp is the wall clock's, which receivers check theirs against.
 */
export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const db = yield* ReadModel
    const log = yield* EventLog
    const projector = yield* Projector
    const metrics = yield* Metrics
    const clock = yield* Effect.clock
    const batches = batchReads(db)
    const webhooks = webhookReads(db)
    const inFlight = new Set<string>()
    const run = yield* FiberSet.makeRuntime<never, void, never>()

    const post = (d: DueDelivery, payload: string) =>
      Effect.tryPromise({
        try: async (signal) => {
          const sentAt = new Date()
          const response = await fetch(d.url, {
            method: "POST",
            headers: {
              "content-type": "application/json",
              "webhook-id": d.id,
              "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)),
              "webhook-signature": new Webhook(d.secret).sign(d.id, sentAt, payload),
            },
            body: payload,
            signal: AbortSignal.any([signal, AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)]),
            redirect: "manual",
          })
          await response.arrayBuffer().catch(() => undefined)
          return { status: response.status, ok: response.status >= 200 && response.status < 300, error: response.ok ? null : `answered ${response.status}` }
        },
        catch: (error) => error,
      }).pipe(Effect.catchAll((error) => Effect.succeed({ status: null, ok: false, error: String((error as Error)?.message ?? error) })))

    const attempt = (d: DueDelivery) =>
      Effect.gen(function* () {
        const row = batches.one(d.batch_id)
        // A final event can reach the log while the batch's last rows settle: its object is sent once it is final.
        if (row !== undefined && !FinalBatchStatuses.has(row.status)) return
        const now = yield* clock.currentTimeMillis
        const payload = JSON.stringify({ type: d.event, timestamp: new Date(now).toISOString(), data: row === undefined ? { id: d.batch_id } : toBatchObject(row) })
        const outcome = row === undefined ? { status: null, ok: false, error: "the batch was deleted before its webhook was delivered" } : yield* post(d, payload)
        const n = d.attempts + 1
        const after = yield* clock.currentTimeMillis
        const event: WebhookEvent = {
          type: "webhook_delivery_attempted",
          webhook_id: d.webhook_id,
          delivery_id: d.id,
          attempt: n,
          at: after,
          status: outcome.status,
          ok: outcome.ok,
          error: outcome.error,
          next_at: outcome.ok || row === undefined ? null : nextAttemptAt(d.created_at, n, after, Math.random()),
        }
        const [written] = yield* log.append([
          { subject: webhookSubject(d.webhook_id, "delivery_attempted"), data: encoder.encode(JSON.stringify(event)), msgId: `${d.id}:${n}` },
        ])
        if (!written!.duplicate) metrics.webhookAttempted(outcome.ok, !outcome.ok && event.next_at === null)
        yield* projector.awaitSeq(written!.seq)
      }).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning(`webhook delivery ${d.id} could not be recorded; it is tried again`, cause)),
        Effect.ensuring(Effect.sync(() => inFlight.delete(d.id))),
      )

    const look = Effect.gen(function* () {
      const now = yield* clock.currentTimeMillis
      for (const d of webhooks.due(now)) {
        if (inFlight.has(d.id)) continue
        inFlight.add(d.id)
        run(attempt(d))
      }
    })
    yield* look.pipe(
      Effect.zipRight(Effect.sleep(LOOK_EVERY).pipe(Effect.withClock(Clock.make()))),
      Effect.forever,
      Effect.forkScoped,
    )
  }),
)
