import { Context, Effect, Layer } from "effect"
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client"

export type SettledOutcome = "completed" | "failed" | "cancelled" | "expired"

/** One model's state as its actor and its load see it now, for the gauges and the admin view. */
export interface ModelSnapshot {
  readonly model: string
  readonly batchConcurrency: number
  /** The concurrency after pushback, before interactive requests take their slots. */
  readonly concurrency: number
  /** The batch slots the model may use now: after give-way and pushback. */
  readonly slotsLimit: number
  readonly slotsInUse: number
  readonly running: number
  /** Rows waiting for a slot or for their retry, by account. */
  readonly queuedByAccount: ReadonlyMap<string, number>
  /** The same rows by their batch's priority. */
  readonly queuedByPriority: ReadonlyMap<string, number>
  readonly interactiveInFlight: number
  /** The instance that owns the model's slots (its lease holder). */
  readonly leaseOwner: string
}

/** How a model's lease changed hands at this instance: taken, handed over to another, or lost (not renewed in time, or taken by another). */
export type LeaseChange = "taken" | "handed_over" | "lost"

export interface ProjectionLag {
  readonly events: number
  readonly seconds: number
}

/**
 * Sluice's Prometheus metrics. Counters and histograms are moved by narrow calls made where the thing
 * happens; gauges read callbacks that the parts holding the state register. Each service instance has
 * its own registry, so several can run in one process.
 */
export interface MetricsShape {
  readonly registry: Registry
  readonly rowSettled: (model: string, outcome: SettledOutcome, code?: string, rows?: number) => void
  readonly attempt: (model: string) => void
  /** `reason`: the upstream's status (`429`, `503`, …), `timeout` or `reset`. */
  readonly retry: (model: string, reason: string) => void
  readonly upstreamAnswered: (model: string, outcome: string, seconds: number) => void
  /** A row's first start, this long after its batch was created. */
  readonly firstStart: (model: string, seconds: number) => void
  /** A row's start was decided; `early`: ahead of its turn, for its deadline. */
  readonly rowStarted: (model: string, priority: string, early: boolean) => void
  readonly createRefused: (status: number) => void
  /** One append stored `messages` messages holding `events` events (a lane window's row events each). */
  readonly appended: (messages: number, events: number, seconds: number) => void
  /** A webhook delivery attempt is in the log; `givenUp`: it failed and none follows. */
  readonly webhookAttempted: (ok: boolean, givenUp: boolean) => void
  readonly leaseChanged: (model: string, change: LeaseChange) => void
  readonly httpRequest: (method: string, route: string, status: number, seconds: number) => void
  readonly watchModels: (source: () => ReadonlyArray<ModelSnapshot>) => void
  readonly watchBatches: (source: () => ReadonlyMap<string, number>) => void
  readonly watchProjectionLag: (source: () => Promise<ProjectionLag | undefined>) => void
  readonly watchLog: (available: () => boolean) => void
  /** The deployment's unfinished batches by why they wait (src/domain/waiting), counted at each scrape. */
  readonly watchWaiting: (source: () => ReadonlyMap<string, number>) => void
}

/** This instance's id: the lease owner it names, shown in `/readyz` and the admin view. */
export class InstanceId extends Context.Tag("Metrics/InstanceId")<InstanceId, string>() {
  static readonly layer = (id: string) => Layer.succeed(InstanceId, id)
}

export class Metrics extends Context.Tag("Metrics/Metrics")<Metrics, MetricsShape>() {
  /** A registry of its own, with Node's default process metrics, for this service instance. */
  static readonly live = Layer.effect(Metrics, Effect.map(InstanceId, (id) => make(id)))
}

/** The outcome label of one upstream answer: `ok`, its status, `timeout` or `reset`. */
export const answerLabel = (answer: { readonly _tag: string; readonly status?: number }) =>
  answer._tag === "Timeout"
    ? "timeout"
    : answer._tag === "NetworkError"
      ? "reset"
      : answer.status !== undefined && answer.status >= 200 && answer.status < 300
        ? "ok"
        : String(answer.status)

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]
const WAIT_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200, 21600, 86400]
const APPEND_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

export const make = (instance: string): MetricsShape => {
  const registry = new Registry()
  const registers = [registry]
  collectDefaultMetrics({ register: registry })

  const settled = new Counter({
    name: "sluice_rows_settled_total",
    help: "Batch rows that reached a final status, by model and outcome (completed, failed, cancelled, expired), counted once the log holds the settle; code is a failed row's error code",
    labelNames: ["model", "outcome", "code"] as const,
    registers,
  })
  const attempts = new Counter({
    name: "sluice_upstream_attempts_total",
    help: "Batch row attempts sent to the model's upstream (a row whose stored body cannot be sent makes none)",
    labelNames: ["model"] as const,
    registers,
  })
  const retries = new Counter({
    name: "sluice_upstream_retries_total",
    help: "Batch row attempts that will be retried, by the reason: the upstream's status, timeout or reset",
    labelNames: ["model", "reason"] as const,
    registers,
  })
  const latency = new Histogram({
    name: "sluice_upstream_latency_seconds",
    help: "Time from sending a batch row's request to the upstream's answer, by outcome (ok, a status, timeout, reset)",
    labelNames: ["model", "outcome"] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  })
  const firstStart = new Histogram({
    name: "sluice_row_first_start_seconds",
    help: "Time from a batch's create to each of its rows' first start",
    labelNames: ["model"] as const,
    buckets: WAIT_BUCKETS,
    registers,
  })
  const started = new Counter({
    name: "sluice_rows_started_total",
    help: "Batch row starts (first attempts and retries), by model, the batch's priority, and order: turn, or deadline for a row started ahead of its turn to start before its batch expires",
    labelNames: ["model", "priority", "order"] as const,
    registers,
  })
  const refused = new Counter({
    name: "sluice_batch_creates_refused_total",
    help: "Batch creates refused (POST /v1/batches, inline or from a file, and reruns), by the HTTP status answered, in the label reason",
    labelNames: ["reason"] as const,
    registers,
  })
  const appendSeconds = new Histogram({
    name: "sluice_eventlog_append_seconds",
    help: "Time each append to the event log took, from the call to its success (one or more messages each; a failed append is not observed)",
    buckets: APPEND_BUCKETS,
    registers,
  })
  const appendedEvents = new Counter({
    name: "sluice_eventlog_events_appended_total",
    help: "Events this instance stored in the log: each row event of a lane window, one for every other event (a rows_added or row_bodies chunk is one, whatever rows it holds), none for a file's raw parts; de-duplicated retries not counted",
    registers,
  })
  const appendedMessages = new Counter({
    name: "sluice_eventlog_messages_appended_total",
    help: "Messages this instance stored in the log (a lane window, an input rows chunk, a file's part: one each, even one stored in parts); de-duplicated retries not counted",
    registers,
  })
  const webhookAttempts = new Counter({
    name: "sluice_webhook_attempts_total",
    help: "Webhook delivery attempts recorded in the log, by outcome: ok (a 2xx answer) or failed (another status, no answer, or the batch deleted first)",
    labelNames: ["outcome"] as const,
    registers,
  })
  // Both series from the start: a failure ratio over them is defined before the first delivery.
  webhookAttempts.inc({ outcome: "ok" }, 0)
  webhookAttempts.inc({ outcome: "failed" }, 0)
  const webhooksGivenUp = new Counter({
    name: "sluice_webhook_deliveries_given_up_total",
    help: "Webhook deliveries given up: their last attempt failed three days after their event, or their batch was deleted",
    registers,
  })
  const leaseChanges = new Counter({
    name: "sluice_lease_changes_total",
    help: "A model's lease changing hands at this instance, by change: taken, handed_over (released for another instance), lost (not renewed in time, or another holds it)",
    labelNames: ["model", "change"] as const,
    registers,
  })
  const http = new Histogram({
    name: "sluice_http_request_duration_seconds",
    help: "Time to answer an HTTP request (to its headers, for streams), by route template and status",
    labelNames: ["method", "route", "status"] as const,
    buckets: HTTP_BUCKETS,
    registers,
  })

  let models: () => ReadonlyArray<ModelSnapshot> = () => []
  const modelGauge = (name: string, help: string, value: (m: ModelSnapshot) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ["model"] as const,
      registers,
      collect() {
        this.reset()
        for (const m of models()) this.set({ model: m.model }, value(m))
      },
    })
  modelGauge("sluice_rows_running", "Batch rows taken and not yet settled, by model", (m) => m.running)
  modelGauge("sluice_batch_slots_in_use", "Batch rows at the model's upstream now", (m) => m.slotsInUse)
  modelGauge(
    "sluice_batch_slots_limit",
    "Batch rows the model may run now: batch_concurrency after pushback and interactive give-way",
    (m) => m.slotsLimit,
  )
  modelGauge("sluice_batch_concurrency", "The model's catalog batch_concurrency", (m) => m.batchConcurrency)
  modelGauge(
    "sluice_upstream_pushback",
    "Slots the model's upstream has taken back by pushback (429, 503, a long vLLM queue): batch_concurrency less the concurrency now",
    (m) => m.batchConcurrency - m.concurrency,
  )
  modelGauge(
    "sluice_interactive_in_flight",
    "Interactive requests (chat completions and responses) this instance has in flight, by model; the slot limit also counts the other instances'",
    (m) => m.interactiveInFlight,
  )
  new Gauge({
    name: "sluice_rows_queued",
    help: "Batch rows waiting for a slot or for their retry, by model and account",
    labelNames: ["model", "account"] as const,
    registers,
    collect() {
      this.reset()
      for (const m of models()) for (const [account, n] of m.queuedByAccount) this.set({ model: m.model, account }, n)
    },
  })
  new Gauge({
    name: "sluice_rows_queued_by_priority",
    help: "Batch rows waiting for a slot or for their retry, by model and their batch's priority",
    labelNames: ["model", "priority"] as const,
    registers,
    collect() {
      this.reset()
      for (const m of models()) for (const [priority, n] of m.queuedByPriority) this.set({ model: m.model, priority }, n)
    },
  })

  new Gauge({
    name: "sluice_leases_held",
    help: "1 for each model whose slots this instance owns (holds its lease), 0 for each other model of the catalog",
    labelNames: ["model"] as const,
    registers,
    collect() {
      this.reset()
      for (const m of models()) this.set({ model: m.model }, m.leaseOwner === instance ? 1 : 0)
    },
  })

  let batches: () => ReadonlyMap<string, number> = () => new Map()
  new Gauge({
    name: "sluice_batches",
    help: "Batches in the read model, by status",
    labelNames: ["status"] as const,
    registers,
    collect() {
      this.reset()
      for (const [status, n] of batches()) this.set({ status }, n)
    },
  })

  let waiting: () => ReadonlyMap<string, number> = () => new Map()
  new Gauge({
    name: "sluice_batches_waiting",
    help: "Unfinished batches of the whole deployment by their waiting_on reason (each instance reports the same figure from its read model: aggregate with max, not sum)",
    labelNames: ["reason"] as const,
    registers,
    collect() {
      this.reset()
      for (const [reason, n] of waiting()) this.set({ reason }, n)
    },
  })

  let lag: () => Promise<ProjectionLag | undefined> = async () => undefined
  // A scrape collects every gauge at once: the two lag gauges share the one look at the log's head under way.
  let looking: Promise<ProjectionLag | undefined> | undefined
  const currentLag = () => {
    looking ??= lag().finally(() => {
      looking = undefined
    })
    return looking
  }
  new Gauge({
    name: "sluice_projection_lag_events",
    help: "Log messages (a lane window is one) that this instance's projections have not applied yet; kept at its last value while the log does not answer",
    registers,
    async collect() {
      const now = await currentLag()
      if (now !== undefined) this.set(now.events)
    },
  })
  new Gauge({
    name: "sluice_projection_lag_seconds",
    help: "How far behind the log this instance's projections are, in seconds (0 when caught up); kept at its last value while the log does not answer",
    registers,
    async collect() {
      const now = await currentLag()
      if (now !== undefined) this.set(now.seconds)
    },
  })

  let logAvailable: () => boolean = () => true
  new Gauge({
    name: "sluice_eventlog_available",
    help: "1 while the event log takes this instance's appends, 0 while its last append or probe found it unavailable",
    registers,
    collect() {
      this.set(logAvailable() ? 1 : 0)
    },
  })

  return {
    registry,
    rowSettled: (model, outcome, code = "", rows = 1) => {
      if (rows > 0) settled.inc({ model, outcome, code }, rows)
    },
    attempt: (model) => attempts.inc({ model }),
    retry: (model, reason) => retries.inc({ model, reason }),
    upstreamAnswered: (model, outcome, seconds) => latency.observe({ model, outcome }, seconds),
    firstStart: (model, seconds) => firstStart.observe({ model }, Math.max(0, seconds)),
    rowStarted: (model, priority, early) => started.inc({ model, priority, order: early ? "deadline" : "turn" }),
    createRefused: (status) => refused.inc({ reason: String(status) }),
    appended: (messages, events, seconds) => {
      appendSeconds.observe(seconds)
      if (messages > 0) appendedMessages.inc(messages)
      if (events > 0) appendedEvents.inc(events)
    },
    webhookAttempted: (ok, givenUp) => {
      webhookAttempts.inc({ outcome: ok ? "ok" : "failed" })
      if (givenUp) webhooksGivenUp.inc()
    },
    leaseChanged: (model, change) => leaseChanges.inc({ model, change }),
    httpRequest: (method, route, status, seconds) => http.observe({ method, route, status: String(status) }, seconds),
    watchModels: (source) => {
      models = source
    },
    watchBatches: (source) => {
      batches = source
    },
    watchProjectionLag: (source) => {
      lag = source
    },
    watchLog: (available) => {
      logAvailable = available
    },
    watchWaiting: (source) => {
      waiting = source
    },
  }
}
