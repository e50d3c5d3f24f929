import { HttpApiSchema, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Redacted } from "effect"
import { LogHealth } from "../eventlog/LogHealth.js"
import { InstanceId, Metrics } from "../metrics/Metrics.js"
import { LogSilent, ProjectionLag } from "../projections/lag.js"
import { NotReady } from "./api.js"
import { sameSecret, sentBearer } from "./auth.js"
import { unauthorized } from "./errors.js"
import { errorResponse } from "./respond.js"
import { HttpSettings } from "./settings.js"

/** What a load balancer and a scraper ask of an instance: is it up, is it ready, its metrics. */
export class Probes extends Effect.Service<Probes>()("Http/Probes", {
  effect: Effect.gen(function* () {
    const instance = yield* InstanceId
    const metrics = yield* Metrics
    const lag = yield* ProjectionLag
    const settings = yield* HttpSettings
    const health = yield* LogHealth
    metrics.watchLog(() => health.unavailable() === undefined)
    const notReady = (reason: string) =>
      HttpServerResponse.unsafeJson({ status: "unavailable", instance, reason }, { status: HttpApiSchema.getStatusError(NotReady) })
    const mayScrape = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
      if (Option.isNone(settings.metricsToken)) return true
      const sent = sentBearer(request)
      return sent !== undefined && sameSecret(sent, Redacted.value(settings.metricsToken.value))
    })

    const healthy = Effect.sync(() => HttpServerResponse.unsafeJson({ status: "ok", instance }))

    const cannotReach = (why: string) => new LogSilent({ message: `the event log cannot be reached (${why})` })
    const readiness = Effect.suspend(() => {
      // An embedded log whose write lock another process holds still tells its head. Known away, it is
      // said at once; thought up, the log is asked afresh: a probe begun before a partition healed may
      // still time out after this answer, and this newer one's verdict is the one that holds.
      const away = health.unavailable()
      if (away !== undefined) return Effect.fail(cannotReach(away))
      return Effect.zipRight(Effect.mapError(health.check, (e) => cannotReach(e.message)), lag.check, { concurrent: true })
    }).pipe(
      Effect.map((now) =>
        now.seconds > settings.readyMaxLagSeconds
          ? notReady(
              `the projections are ${now.seconds.toFixed(1)} s (${now.events} events) behind the event log, more than ${settings.readyMaxLagSeconds} s`,
            )
          : HttpServerResponse.unsafeJson({
              status: "ready",
              instance,
              log: { head: now.head },
              projections: { applied: now.applied, lag_events: now.events, lag_seconds: now.seconds },
            }),
      ),
      Effect.catchTag("LogSilent", (e) => Effect.succeed(notReady(e.message))),
    )

    const scrape = Effect.gen(function* () {
      if (!(yield* mayScrape)) return errorResponse(unauthorized("Invalid metrics token"))
      const text = yield* Effect.promise(() => metrics.registry.metrics())
      return HttpServerResponse.text(text, { contentType: metrics.registry.contentType })
    })

    return { healthy, readiness, scrape } as const
  }),
}) {}
