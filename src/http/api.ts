import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { JSONSchema, Schema } from "effect"
import {
  AccountObject,
  BatchDeleted,
  BatchList,
  BatchObject,
  CreateAccountPayload,
  CreateBatchPayload,
  CreatedKey,
  CreateKeyPayload,
  ResultLine,
  ResultsPage,
  RevokedKey,
  UpdateAccountPayload,
} from "../domain/api/index.js"
import { BatchEstimate } from "../domain/api/BatchEstimate.js"
import { BatchProgress } from "../domain/api/BatchProgress.js"
import { ResponseObject } from "../domain/api/ResponseObject.js"
import { ServiceTiers } from "../domain/response/validateRequest.js"
import { WebhookEventName } from "../domain/webhook/events.js"
import { BatchMetadata } from "../domain/api/BatchObject.js"
import { RerunnableStatuses } from "../domain/batch/rerunRequest.js"
import { BatchEndpoint } from "../domain/batch/endpoint.js"
import { Priority } from "../domain/scheduling/priority.js"
import { ResponseEventsGroup } from "./responseEventsApi.js"
import { StoredResponsesGroup } from "./storedResponsesApi.js"
import { StreamsGroup } from "./streamsApi.js"
import { FilesGroup } from "./filesApi.js"
import { bodyDefinitions, documentedBody } from "./documentedBody.js"
import {
  BadRequest,
  Conflict,
  Forbidden,
  NotFound,
  PayloadTooLarge,
  RequestTimeout,
  TooManyRequests,
  Unauthorized,
  Unavailable,
  Unprocessable,
} from "./errors.js"

const BatchPath = Schema.Struct({ batch_id: Schema.String })
/** Query values stay strings here: the handlers answer a bad one with the API's own 400 envelope. */
const PageParams = Schema.Struct({
  limit: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))),
  after: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))),
})

const AsOf = Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))).annotations({
  description:
    "A Unix time in seconds: the answer as it was at the end of that second, computed from the batch's events alone " +
    "(404 before the batch was created) (an addition to the contract)",
})
const AsOfParams = Schema.Struct({ as_of: AsOf })

const ResultsParams = Schema.Struct({
  ...PageParams.fields,
  as_of: AsOf,
  status: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))).annotations({
    description: "Only rows in this status: queued, running, completed, failed, cancelled or expired (an addition to the contract)",
  }),
  error_code: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))).annotations({
    description: "Only rows whose error has this code, e.g. timeout (an addition to the contract)",
  }),
})
const ResultPath = Schema.Struct({ batch_id: Schema.String, result_id: Schema.String })
const ResultWithRequest = Schema.Struct({
  ...ResultLine.fields,
  request: Schema.NullOr(
    Schema.Struct({ custom_id: Schema.String, method: Schema.Literal("POST"), url: BatchEndpoint, body: Schema.Unknown }),
  ),
}).annotations({
  identifier: "ResultWithRequest",
  description: "One result line with the request it answers (null once the log no longer holds the request body)",
})

const EventsParams = Schema.Struct({
  last_event_id: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))),
})
const EventsHeaders = Schema.Struct({ "last-event-id": Schema.optional(Schema.String) })

const ResultLines = HttpApiSchema.Text({ contentType: "application/x-ndjson" }).annotations({
  description:
    "Every result line of the batch in submission order, one JSON object per line, each ending in a newline: " +
    "the same objects as the `data` of the results pages. Streamed as it is read.",
})
const BatchEventStream = HttpApiSchema.Text({ contentType: "text/event-stream" }).annotations({
  description:
    "Server-Sent Events: the batch's events so far, then live ones until the batch is done (closed and every row " +
    "settled) or deleted, when the response ends. Each has `id` (the cursor to resume from), `event` (the event " +
    "type) and `data` (the event as JSON; `rows_added` without request bodies, `row_completed`, `row_failed` and " +
    "`row_cancelled` with the row's `custom_id`). A comment `: keepalive` is sent after 15 s without events. " +
    "Resume with the `Last-Event-ID` header or the `last_event_id` query parameter.",
})


const RerunPayload = Schema.Struct({
  statuses: Schema.optional(Schema.Array(Schema.Literal(...RerunnableStatuses))).annotations({
    description: "Rows in these statuses are run again (default: failed, expired, cancelled)",
  }),
  error_codes: Schema.optional(Schema.Array(Schema.String)).annotations({
    description: "Only rows whose error has one of these codes, e.g. timeout",
  }),
  metadata: Schema.optional(Schema.NullOr(BatchMetadata)).annotations({ description: "The new batch's metadata (default: the original's)" }),
  priority: Schema.optional(Schema.NullOr(Priority)).annotations({ description: "The new batch's priority (default: the original's)" }),
}).annotations({ identifier: "RerunPayload" })

const CreateHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(Schema.String).annotations({
    description:
      "The IETF httpapi draft's Idempotency-Key: the same key with the same body from the same account within 24 hours answers " +
      "the original batch again (with `Idempotent-Replayed: true`) and creates nothing; with another body it answers 422, and " +
      "while the first request is still being stored, 409. An addition to the contract.",
  }),
})

export const BatchesGroup = HttpApiGroup.make("batches")
  .add(
    HttpApiEndpoint.post("create", "/v1/batches")
      .setHeaders(CreateHeaders)
      .addSuccess(BatchObject)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(Conflict)
      .addError(Unprocessable)
      .addError(PayloadTooLarge)
      .annotateContext(documentedBody(CreateBatchPayload)),
  )
  .add(
    HttpApiEndpoint.post("estimate", "/v1/batches/estimate")
      .addSuccess(BatchEstimate)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(PayloadTooLarge)
      .annotateContext(documentedBody(CreateBatchPayload))
      .annotateContext(
        OpenApi.annotations({
          description:
            "Takes exactly a create's body and validates it as a create does (the same errors), stores nothing, and answers " +
            "each model's prompt tokens, completion budget, cost range, rows ahead and estimated completion, and whether a create " +
            "would fit the unfinished-batch limit, the daily quota and the account's `max_priority`. An addition to the contract.",
        }),
      ),
  )
  .add(HttpApiEndpoint.get("list", "/v1/batches").setUrlParams(PageParams).addSuccess(BatchList).addError(BadRequest))
  .add(
    HttpApiEndpoint.get("retrieve", "/v1/batches/:batch_id")
      .setPath(BatchPath)
      .setUrlParams(AsOfParams)
      .addSuccess(BatchObject)
      .addError(BadRequest),
  )
  .add(
    HttpApiEndpoint.get("results", "/v1/batches/:batch_id/results")
      .setPath(BatchPath)
      .setUrlParams(ResultsParams)
      .addSuccess(ResultsPage)
      .addError(BadRequest),
  )
  .add(
    HttpApiEndpoint.get("result", "/v1/batches/:batch_id/results/:result_id")
      .setPath(ResultPath)
      .addSuccess(ResultWithRequest),
  )
  .add(HttpApiEndpoint.get("resultsJsonl", "/v1/batches/:batch_id/results.jsonl").setPath(BatchPath).addSuccess(ResultLines))
  .add(HttpApiEndpoint.get("progress", "/v1/batches/:batch_id/progress").setPath(BatchPath).addSuccess(BatchProgress))
  .add(
    HttpApiEndpoint.get("events", "/v1/batches/:batch_id/events")
      .setPath(BatchPath)
      .setUrlParams(EventsParams)
      .setHeaders(EventsHeaders)
      .addSuccess(BatchEventStream)
      .addError(BadRequest),
  )
  .add(HttpApiEndpoint.post("cancel", "/v1/batches/:batch_id/cancel").setPath(BatchPath).addSuccess(BatchObject))
  .add(
    HttpApiEndpoint.post("rerun", "/v1/batches/:batch_id/rerun")
      .setPath(BatchPath)
      .addSuccess(BatchObject)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(Conflict)
      .annotateContext(documentedBody(RerunPayload, false))
      .annotateContext(
        OpenApi.annotations({
          description:
            "A new batch of exactly those rows of a final batch with the given statuses (default failed, expired, cancelled) " +
            "and, if given, error codes: the same custom_ids, bodies and submission order, its `rerun_of` naming the original. " +
            "409 while the batch is not final; 400 when the filter selects no row. An addition to the contract.",
        }),
      ),
  )
  .add(
    HttpApiEndpoint.del("delete", "/v1/batches/:batch_id").setPath(BatchPath).addSuccess(BatchDeleted).addError(Conflict),
  )
  .addError(Unauthorized)
  // Also "batch inference is unavailable at the moment", while the event log cannot be reached.
  .addError(NotFound)
  .addError(TooManyRequests)

export const AdminGroup = HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.post("createAccount", "/admin/v1/accounts")
      .addSuccess(AccountObject)
      .addError(Conflict)
      .annotateContext(documentedBody(CreateAccountPayload)),
  )
  .add(
    HttpApiEndpoint.patch("updateAccount", "/admin/v1/accounts/:id")
      .setPath(Schema.Struct({ id: Schema.String }))
      .addSuccess(AccountObject)
      .annotateContext(documentedBody(UpdateAccountPayload)),
  )
  .add(
    HttpApiEndpoint.post("createKey", "/admin/v1/accounts/:id/keys")
      .setPath(Schema.Struct({ id: Schema.String }))
      .addSuccess(CreatedKey)
      .annotateContext(documentedBody(CreateKeyPayload)),
  )
  .add(
    HttpApiEndpoint.post("revokeKey", "/admin/v1/keys/:id/revoke")
      .setPath(Schema.Struct({ id: Schema.String }))
      .addSuccess(RevokedKey),
  )
  .add(
    HttpApiEndpoint.get("batch", "/admin/v1/batches/:batch_id")
      .setPath(BatchPath)
      .addSuccess(BatchObject)
      .annotateContext(
        OpenApi.annotations({
          description:
            "Any account's batch as its owner would read it, with its `waiting_on`: for an operator, also while the account's daily quota " +
            "is used up (its owner's calls answer 429 then) and while the event log cannot be reached (read from this instance's read model)",
        }),
      ),
  )
  .addError(BadRequest)
  .addError(Unauthorized)
  .addError(NotFound)
  .addError(PayloadTooLarge)
  .addError(Unavailable)

const WebhookId = Schema.Struct({ id: Schema.String })
const WebhookPayload = Schema.Struct({
  url: Schema.String.annotations({ description: "An http(s) URL; one that resolves to this instance is refused" }),
  events: Schema.optional(Schema.Array(WebhookEventName)).annotations({ description: "Default: all four" }),
}).annotations({ identifier: "WebhookPayload" })
const WebhookObject = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("webhook"),
  account_id: Schema.String,
  url: Schema.String,
  events: Schema.Array(WebhookEventName),
  created_at: Schema.Int,
}).annotations({ identifier: "Webhook" })
const CreatedWebhook = Schema.Struct({
  ...WebhookObject.fields,
  secret: Schema.String.annotations({ description: "The Standard Webhooks signing secret (whsec_…), shown in this answer only" }),
}).annotations({ identifier: "CreatedWebhook" })
const WebhookDelivery = Schema.Struct({
  id: Schema.String.annotations({ description: "The webhook-id every attempt of this delivery carries" }),
  object: Schema.Literal("webhook.delivery"),
  batch_id: Schema.String,
  event: WebhookEventName,
  status: Schema.Literal("pending", "delivered", "failed"),
  attempts: Schema.NonNegativeInt,
  created_at: Schema.Int,
  last_attempt_at: Schema.NullOr(Schema.Int),
  last_status: Schema.NullOr(Schema.Int),
  last_error: Schema.NullOr(Schema.String),
  next_attempt_at: Schema.NullOr(Schema.Int),
}).annotations({ identifier: "WebhookDelivery" })

/** Signed webhooks for an account's batch events, through the admin API. */
export const WebhooksGroup = HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("createWebhook", "/admin/v1/accounts/:id/webhooks")
      .setPath(WebhookId)
      .addSuccess(CreatedWebhook)
      .annotateContext(documentedBody(WebhookPayload)),
  )
  .add(
    HttpApiEndpoint.get("listWebhooks", "/admin/v1/accounts/:id/webhooks")
      .setPath(WebhookId)
      .addSuccess(Schema.Struct({ object: Schema.Literal("list"), data: Schema.Array(WebhookObject) })),
  )
  .add(
    HttpApiEndpoint.del("deleteWebhook", "/admin/v1/webhooks/:id")
      .setPath(WebhookId)
      .addSuccess(Schema.Struct({ id: Schema.String, object: Schema.Literal("webhook.deleted"), deleted: Schema.Literal(true) })),
  )
  .add(
    HttpApiEndpoint.get("webhookDeliveries", "/admin/v1/webhooks/:id/deliveries")
      .setPath(WebhookId)
      .addSuccess(Schema.Struct({ object: Schema.Literal("list"), data: Schema.Array(WebhookDelivery) })),
  )
  .addError(BadRequest)
  .addError(Unauthorized)
  .addError(NotFound)
  .addError(Unavailable)
  .annotateContext(OpenApi.annotations({ title: "admin" }))

const ChatMessage = Schema.Struct(
  { role: Schema.String, content: Schema.optional(Schema.Unknown) },
  Schema.Record({ key: Schema.String, value: Schema.Unknown }),
)
export const ChatCompletionRequest = Schema.Struct(
  {
    model: Schema.String,
    messages: Schema.NonEmptyArray(ChatMessage),
    stream: Schema.optional(Schema.NullOr(Schema.Boolean)),
    stream_options: Schema.optional(Schema.NullOr(Schema.Struct({ include_usage: Schema.optional(Schema.Boolean) }))),
    service_tier: Schema.optional(Schema.NullOr(Schema.String)).annotations({
      description:
        "`flex` waits for one of the model's batch slots, in the account's turn with its batches, and answers `service_tier: \"flex\"`; " +
        "one that cannot start within `max_queue_wait_s` answers 408 with Retry-After. Other tiers are served at once and answered `default`",
    }),
    max_queue_wait_s: Schema.optional(Schema.NullOr(Schema.Int)).annotations({ description: "flex only: 5–300 s, default 60" }),
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown }),
)
const ChatCompletion = Schema.Struct(
  {
    id: Schema.String,
    object: Schema.Literal("chat.completion"),
    created: Schema.Number,
    model: Schema.String,
    choices: Schema.Array(Schema.Unknown),
    usage: Schema.optional(Schema.Unknown),
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown }),
).annotations({
  description:
    "The model server's answer, passed on with its status. With `stream: true` the answer is `text/event-stream`: " +
    "the upstream's events as they arrive, ending with `data: [DONE]`.",
})

/** Interactive traffic, served by Sluice itself and proxied to the model's upstream; batches give way to it. */
export const ChatGroup = HttpApiGroup.make("chat")
  .add(
    HttpApiEndpoint.post("completions", "/v1/chat/completions")
      .addSuccess(ChatCompletion)
      .addError(BadRequest)
      .addError(Unauthorized)
      .addError(NotFound)
      .addError(PayloadTooLarge)
      .addError(TooManyRequests)
      .addError(RequestTimeout)
      .addError(Unavailable)
      .annotateContext(documentedBody(ChatCompletionRequest)),
  )

const ResponseCreateRequest = Schema.Struct(
  {
    model: Schema.String,
    input: Schema.Union(Schema.String, Schema.Array(Schema.Unknown)).annotations({
      description: "The text of one user message, or a list of message, function_call and function_call_output items",
    }),
    instructions: Schema.optional(Schema.NullOr(Schema.String)).annotations({ description: "A system message before the input" }),
    max_output_tokens: Schema.optional(Schema.NullOr(Schema.Int)),
    temperature: Schema.optional(Schema.NullOr(Schema.Number)),
    top_p: Schema.optional(Schema.NullOr(Schema.Number)),
    tools: Schema.optional(Schema.Array(Schema.Unknown)).annotations({ description: "Function tools only" }),
    tool_choice: Schema.optional(Schema.Unknown),
    metadata: Schema.optional(Schema.NullOr(BatchMetadata)).annotations({
      description:
        "Answered back in the Response object. `stream_id` makes the request an item of that stream (queued whatever `background` says, " +
        "answered at once, failing as expired if it has not started within the stream's window); `custom_id` is carried to its completion event",
    }),
    background: Schema.optional(Schema.NullOr(Schema.Boolean)).annotations({
      description:
        "true answers at once, `in_progress`, and queues the request for one of its model's batch slots like a batch row; read it with `GET /v1/responses/{id}`",
    }),
    stream: Schema.optional(Schema.NullOr(Schema.Boolean)).annotations({ description: "true is refused with 400: a response is answered whole" }),
    service_tier: Schema.optional(Schema.NullOr(Schema.Literal(...ServiceTiers))).annotations({
      description:
        "`flex` (not with background) waits for one of the model's batch slots and answers `service_tier: \"flex\"`, or 408 with " +
        "Retry-After when it cannot start within `max_queue_wait_s`; other tiers are served at once and answered `default`",
    }),
    max_queue_wait_s: Schema.optional(Schema.NullOr(Schema.Int)).annotations({ description: "flex only: 5–300 s, default 60" }),
    priority: Schema.optional(Schema.NullOr(Priority)).annotations({
      description:
        "A queued response's priority among its model's queued work (background: its own, default standard; a stream's item: its own, " +
        "default the stream's); above the account's `max_priority` answers 403. A flex or interactive request naming another than " +
        "standard answers 400. An addition to the contract",
    }),
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown }),
).annotations({ identifier: "ResponseCreateRequest" })

/** OpenAI's Responses API over the same interactive path as chat completions. */
export const ResponsesGroup = HttpApiGroup.make("responses").add(
  HttpApiEndpoint.post("create", "/v1/responses")
    .addSuccess(ResponseObject)
    .addError(BadRequest)
    .addError(Unauthorized)
    .addError(Forbidden)
    .addError(NotFound)
    .addError(PayloadTooLarge)
    .addError(TooManyRequests)
    .addError(RequestTimeout)
    .addError(Unavailable)
    .annotateContext(documentedBody(ResponseCreateRequest))
    .annotateContext(
      OpenApi.annotations({
        description:
          "Converted to a chat completion and checked exactly as a Responses-shaped batch row is, then passed to the model's " +
          "upstream in one of the account's slots, as `POST /v1/chat/completions` is; answers when the upstream has. The " +
          "Response is `completed`, `incomplete` (stopped on its token limit or a content filter) or `failed` (the upstream " +
          "answered an error or nothing), always with status 200. With `background: true`, or `metadata.stream_id` naming an " +
          "open stream, it is queued for a batch slot and answered at once `in_progress` (`GET /v1/responses/{id}` reads it).",
      }),
    ),
)

const ModelObject = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("model"),
  created: Schema.Number,
  owned_by: Schema.String,
  batch_concurrency: Schema.Number,
  input_usd_per_mtok: Schema.Number,
  output_usd_per_mtok: Schema.Number,
  endpoints: Schema.Array(BatchEndpoint).annotations({
    description: "The endpoints the model serves: a batch's rows and requests of their own may call these with it",
  }),
}).annotations({ identifier: "Model" })

/** The models a key's account may use, in OpenAI's list shape with Sluice's fields. */
export const ModelsGroup = HttpApiGroup.make("models")
  .add(
    HttpApiEndpoint.get("list", "/v1/models")
      .addSuccess(Schema.Struct({ object: Schema.Literal("list"), data: Schema.Array(ModelObject) }).annotations({ identifier: "ModelList" })),
  )
  .addError(Unauthorized)
  .addError(TooManyRequests)

const ModelState = Schema.Struct({
  id: Schema.String,
  batch_concurrency: Schema.Number,
  concurrency: Schema.Number.annotations({ description: "batch_concurrency after pushback" }),
  pushback: Schema.Number.annotations({ description: "Slots taken back by pushback: batch_concurrency less concurrency" }),
  slots_limit: Schema.Number.annotations({ description: "Batch rows the model may run now, after pushback and interactive give-way" }),
  slots_in_use: Schema.Number,
  running: Schema.Number,
  queued: Schema.Number,
  queued_by_account: Schema.Record({ key: Schema.String, value: Schema.Number }),
  queued_by_priority: Schema.Record({ key: Schema.String, value: Schema.Number }).annotations({
    description: "The queued rows by their batch's priority: high, standard, background",
  }),
  interactive_in_flight: Schema.Number,
  lease_owner: Schema.String,
}).annotations({ identifier: "ModelState" })

export const LeaseState = Schema.Struct({
  model: Schema.String,
  owner: Schema.String.annotations({ description: "The instance (SLUICE_INSTANCE_ID) that runs the model's slots" }),
  since: Schema.Number.annotations({ description: "Unix ms at which the owner took the lease" }),
  renewed_at: Schema.Number.annotations({ description: "Unix ms of the lease's last renewal" }),
  next_renewal_at: Schema.NullOr(Schema.Number).annotations({
    description: "Unix ms of the next renewal, when the answering instance is the owner; null otherwise",
  }),
  revision: Schema.Number.annotations({ description: "The lease's fencing revision: it only grows" }),
}).annotations({ identifier: "LeaseState" })

const ModelHistoryEntry = Schema.Struct({
  model: Schema.String,
  samples: Schema.Array(
    Schema.Struct({
      at: Schema.Number.annotations({ description: "Unix ms at the end of the sample's span" }),
      starts: Schema.NonNegativeInt.annotations({ description: "Rows started in the span, retries included" }),
      starts_per_second: Schema.Number,
      slots_in_use: Schema.Number.annotations({ description: "The mean over the span" }),
      slots_limit: Schema.Number.annotations({ description: "The mean over the span" }),
    }),
  ),
}).annotations({ identifier: "ModelHistory" })

export const AdminModelsGroup = HttpApiGroup.make("adminModels")
  .add(
    HttpApiEndpoint.get("models", "/admin/v1/models").addSuccess(
      Schema.Struct({ object: Schema.Literal("list"), instance: Schema.String, data: Schema.Array(ModelState) }).annotations({
        identifier: "ModelStateList",
      }),
    ),
  )
  .add(
    HttpApiEndpoint.get("history", "/admin/v1/models/history")
      .addSuccess(
        Schema.Struct({
          object: Schema.Literal("list"),
          instance: Schema.String,
          sample_ms: Schema.Number.annotations({ description: "The span of each sample" }),
          data: Schema.Array(ModelHistoryEntry),
        }).annotations({ identifier: "ModelHistoryList" }),
      )
      .annotateContext(
        OpenApi.annotations({
          description:
            "Each model's last hour at the answering instance, a sample every 10 s, oldest first: the rows it started (the " +
            "models whose lease it holds start them), and its slots in use and their limit, looked at every second and averaged. " +
            "Kept in memory: it starts empty when the instance does",
        }),
      ),
  )
  .add(
    HttpApiEndpoint.get("leases", "/admin/v1/leases").addSuccess(
      Schema.Struct({ object: Schema.Literal("list"), instance: Schema.String, data: Schema.Array(LeaseState) }).annotations({
        identifier: "LeaseStateList",
      }),
    ),
  )
  .addError(Unauthorized)
  .annotateContext(OpenApi.annotations({ title: "admin" }))

const Health = Schema.Struct({ status: Schema.Literal("ok"), instance: Schema.String })
const Readiness = Schema.Struct({
  status: Schema.Literal("ready"),
  instance: Schema.String,
  log: Schema.Struct({ head: Schema.Number }),
  projections: Schema.Struct({ applied: Schema.Number, lag_events: Schema.Number, lag_seconds: Schema.Number }),
}).annotations({ identifier: "Readiness" })
export class NotReady extends Schema.Class<NotReady>("NotReady")(
  { status: Schema.Literal("unavailable"), instance: Schema.String, reason: Schema.String },
  HttpApiSchema.annotations({ status: 503 }),
) {}
const MetricsText = HttpApiSchema.Text({ contentType: "text/plain" }).annotations({
  description: "Prometheus text exposition format (version 0.0.4). With SLUICE_METRICS_TOKEN set, send it as a bearer token.",
})

/** For load balancers, orchestrators and Prometheus: no API key needed. */
export const OperationsGroup = HttpApiGroup.make("operations")
  .add(HttpApiEndpoint.get("healthz", "/healthz").addSuccess(Health))
  .add(HttpApiEndpoint.get("readyz", "/readyz").addSuccess(Readiness).addError(NotReady))
  .add(HttpApiEndpoint.get("metrics", "/metrics").addSuccess(MetricsText).addError(Unauthorized))

const security: Record<string, ReadonlyArray<Record<string, ReadonlyArray<string>>>> = {
  batches: [{ apiKey: [] }],
  chat: [{ apiKey: [] }],
  responses: [{ apiKey: [] }],
  responseEvents: [{ apiKey: [] }],
  storedResponses: [{ apiKey: [] }],
  streams: [{ apiKey: [] }],
  files: [{ apiKey: [] }],
  models: [{ apiKey: [] }],
  admin: [{ adminToken: [] }],
  adminModels: [{ adminToken: [] }],
  webhooks: [{ adminToken: [] }],
}

const decodeErrorRef = "#/components/schemas/HttpApiDecodeError"

/** A request that fails to decode is answered with the API's own 400 envelope (src/http/decodeFailures.ts), not the platform's body. */
const badRequestOnly = (operation: Record<string, any>) => {
  const answer = operation?.responses?.["400"]?.content?.["application/json"]
  if (answer?.schema === undefined) return
  const refs: Array<Record<string, any>> = answer.schema.anyOf ?? [answer.schema]
  const kept = refs.filter((ref) => ref.$ref !== decodeErrorRef)
  answer.schema = kept.length === 0 ? { $ref: "#/components/schemas/BadRequest" } : kept.length === 1 ? kept[0] : { anyOf: kept }
}

/** Servers, the bearer schemes and which operations need them, and the request bodies' schemas. */
const completeDocument = (spec: Record<string, any>): Record<string, any> => {
  for (const item of Object.values(spec.paths ?? {}) as Array<Record<string, any>>) {
    for (const operation of Object.values(item)) {
      badRequestOnly(operation)
      const group = operation?.tags?.[0]
      if (group === "operations" && operation.operationId === "operations.metrics") operation.security = [{}, { metricsToken: [] }]
      else if (group === "operations") operation.security = []
      else if (security[group] !== undefined) operation.security = security[group]
    }
  }
  return {
    ...spec,
    servers: [{ url: "/", description: "This Sluice instance" }],
    components: {
      ...spec.components,
      schemas: Object.fromEntries(
        Object.entries({ ...bodyDefinitions, ...spec.components?.schemas }).filter(([name]) => name !== "HttpApiDecodeError" && name !== "Issue"),
      ),
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "An API key (`sk-sluice-…`), also accepted as `X-API-Key`" },
        adminToken: { type: "http", scheme: "bearer", description: "The operator's `SLUICE_ADMIN_TOKEN`" },
        metricsToken: { type: "http", scheme: "bearer", description: "`SLUICE_METRICS_TOKEN`, when it is set" },
      },
    },
  }
}

export const SluiceApi = HttpApi.make("sluice")
  .add(BatchesGroup)
  .add(ModelsGroup)
  .add(AdminGroup)
  .add(AdminModelsGroup)
  .add(WebhooksGroup)
  .add(ChatGroup)
  .add(ResponsesGroup)
  .add(ResponseEventsGroup)
  .add(StoredResponsesGroup)
  .add(StreamsGroup)
  .add(FilesGroup)
  .add(OperationsGroup)
  .annotateContext(OpenApi.annotations({ title: "Sluice Batch API", version: "0.1.0", transform: completeDocument }))
