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
  ResultsPage,
  RevokedKey,
  UpdateAccountPayload,
} from "../domain/api/index.js"
import { BadRequest, Conflict, Forbidden, NotFound, PayloadTooLarge, TooManyRequests, Unauthorized, Unavailable } from "./errors.js"

const BatchPath = Schema.Struct({ batch_id: Schema.String })
/** Query values stay strings here: the handlers answer a bad one with the API's own 400 envelope. */
const PageParams = Schema.Struct({
  limit: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))),
  after: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))),
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

/** Bodies are read and validated by the handlers (size limit, seed messages); this only documents them. */
const documentedBody = (schema: Schema.Schema.Any) =>
  OpenApi.annotations({
    override: {
      requestBody: { required: true, content: { "application/json": { schema: JSONSchema.make(schema) } } },
    },
  })

export const BatchesGroup = HttpApiGroup.make("batches")
  .add(
    HttpApiEndpoint.post("create", "/v1/batches")
      .addSuccess(BatchObject)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(PayloadTooLarge)
      .annotateContext(documentedBody(CreateBatchPayload)),
  )
  .add(HttpApiEndpoint.get("list", "/v1/batches").setUrlParams(PageParams).addSuccess(BatchList).addError(BadRequest))
  .add(HttpApiEndpoint.get("retrieve", "/v1/batches/:batch_id").setPath(BatchPath).addSuccess(BatchObject))
  .add(
    HttpApiEndpoint.get("results", "/v1/batches/:batch_id/results")
      .setPath(BatchPath)
      .setUrlParams(PageParams)
      .addSuccess(ResultsPage)
      .addError(BadRequest),
  )
  .add(HttpApiEndpoint.get("resultsJsonl", "/v1/batches/:batch_id/results.jsonl").setPath(BatchPath).addSuccess(ResultLines))
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
    HttpApiEndpoint.del("delete", "/v1/batches/:batch_id").setPath(BatchPath).addSuccess(BatchDeleted).addError(Conflict),
  )
  .addError(Unauthorized)
  .addError(NotFound)
  .addError(TooManyRequests)
  .addError(Unavailable)

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
  .addError(BadRequest)
  .addError(Unauthorized)
  .addError(NotFound)
  .addError(PayloadTooLarge)
  .addError(Unavailable)

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
      .annotateContext(documentedBody(ChatCompletionRequest)),
  )

export const SluiceApi = HttpApi.make("sluice")
  .add(BatchesGroup)
  .add(AdminGroup)
  .add(ChatGroup)
  .annotateContext(OpenApi.annotations({ title: "Sluice Batch API", version: "0.1.0" }))
