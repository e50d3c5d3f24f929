import { JSONSchema, type Schema, SchemaAST } from "effect"
import { AccountEvent, accountSubject } from "../domain/account/events.js"
import { BatchEvent, rowEventTypes } from "../domain/batch/events.js"
import { batchSubject, laneSubject, laneToken, RESPONSE_ID_PREFIX } from "../domain/batch/subjects.js"
import { LaneWindow } from "../domain/batch/laneWindow.js"
import { IdempotencyEvent } from "../domain/idempotency/events.js"
import { idempotencySubject } from "../domain/idempotency/subjects.js"
import { documentedHeaders } from "../eventlog/headers.js"
import { WebhookEvent, webhookSubject } from "../domain/webhook/events.js"
import { StreamEvent, streamSubject } from "../domain/stream/events.js"
import { FileEvent, filePartSubject, fileSubject } from "../domain/file/events.js"

/** One kind of stored message: its payload Schema (or, for bytes that are no event, their description) and the subject it is published on. */
interface MessageKind {
  readonly type: string
  readonly schema: Schema.Schema.Any | RawBytes
  readonly address: string
  readonly parameters: Record<string, string>
  /** Kinds that share a subject share a channel. */
  readonly channel: string
}

interface RawBytes {
  readonly raw: true
  readonly contentType: string
  readonly description: string
}

const BATCH_ID = "{batch_id}"
const LANE = "{lane}"
const ACCOUNT_ID = "{account_id}"
const batchParameters = { batch_id: "The batch's id, `batch_…`" }
const RESPONSE_ID = "{response_id}"
const responseParameters = {
  response_id: "The response's id, `resp_…`: a queued response (background, a stream's item, flex) runs as a one-row batch",
}
const STREAM_ID = "{stream_id}"
const streamParameters = { stream_id: "The stream's id, `stream_…`" }
const accountParameters = { account_id: "The account's id" }
const DIGEST = "{digest}"
const idempotencyParameters = { digest: "The hex SHA-256 of the account id and the Idempotency-Key" }
const FILE_ID = "{file_id}"
const fileParameters = { file_id: "The uploaded file's id, `file-…`" }
const WEBHOOK_ID = "{webhook_id}"
const webhookParameters = { webhook_id: "The webhook endpoint's id, `wh_…`" }
const webhookSubjectType = { webhook_created: "webhook_created", webhook_deleted: "webhook_deleted", webhook_delivery_attempted: "delivery_attempted" } as const

/** The literal `type` of an event Schema: every event is a struct with one. */
const typeOf = (schema: Schema.Schema.Any): string => {
  const ast = schema.ast
  if (!SchemaAST.isTypeLiteral(ast)) throw new Error("an event Schema must be a struct")
  const field = ast.propertySignatures.find((p) => p.name === "type")
  if (field === undefined || !SchemaAST.isLiteral(field.type) || typeof field.type.literal !== "string") {
    throw new Error("an event Schema must have a literal `type`")
  }
  return field.type.literal
}

const SAMPLE_MODEL = "m"
/** A subject the code builds for a sample id and model, with the id and the lane as channel parameters. */
const templated = (subject: string, sampleId: string, placeholder: string) =>
  subject.replace(`.${sampleId}.`, `.${placeholder}.`).replace(`.lane.${laneToken(SAMPLE_MODEL)}`, `.lane.${LANE}`)

/**
 * A batch-shaped aggregate's kinds: every batch event but the row events, which are published only
 * inside lane windows (a log from before them has each on its own subject), and the lane window.
 */
const batchShapedKinds = (sampleId: string, placeholder: string, parameters: Record<string, string>, channelPrefix: string): ReadonlyArray<MessageKind> => [
  ...BatchEvent.members.flatMap((schema): ReadonlyArray<MessageKind> => {
    const type = typeOf(schema) as BatchEvent["type"]
    if (rowEventTypes.has(type)) return []
    return [{ type, schema, address: templated(batchSubject(sampleId, type), sampleId, placeholder), parameters, channel: `${channelPrefix}${type}` }]
  }),
  {
    type: "lane_window",
    schema: LaneWindow,
    address: templated(laneSubject(sampleId, SAMPLE_MODEL), sampleId, placeholder),
    parameters: { ...parameters, lane: "The model id made subject-safe, with a short hash of it: one lane per model of the batch" },
    channel: `${channelPrefix}lane_window`,
  },
]

/** Every message the code can publish, read from the event unions themselves. */
export const messageKinds = (): ReadonlyArray<MessageKind> => [
  ...batchShapedKinds("batch_0", BATCH_ID, batchParameters, ""),
  // A response runs as a one-row batch: the same events and payloads, on its own subjects.
  ...batchShapedKinds(`${RESPONSE_ID_PREFIX}0`, RESPONSE_ID, responseParameters, "response_"),
  ...StreamEvent.members.map((schema): MessageKind => {
    const type = typeOf(schema) as StreamEvent["type"]
    return { type, schema, address: streamSubject(STREAM_ID, type), parameters: streamParameters, channel: type }
  }),
  ...FileEvent.members.map((schema): MessageKind => {
    const type = typeOf(schema) as FileEvent["type"]
    return { type, schema, address: fileSubject(FILE_ID, type), parameters: fileParameters, channel: type }
  }),
  {
    type: "file_part",
    schema: {
      raw: true,
      contentType: "application/octet-stream",
      description:
        "A piece of an uploaded file's bytes, not an event: up to 256 KiB, in order, appended before `file_created`, whose " +
        "`content` names them (`first_seq` to `last_seq`, `parts` of them); the file is their data joined. Headers: " +
        "`ce-type: sluice.file.part`, `ce-datacontenttype: application/octet-stream`, `Nats-Msg-Id: <file_id>:part:<n>`. " +
        "Purged with the file, and by the upload itself when it is refused or cut short.",
    },
    address: filePartSubject(FILE_ID),
    parameters: fileParameters,
    channel: "file_part",
  },
  ...AccountEvent.members.map((schema): MessageKind => {
    const type = typeOf(schema) as AccountEvent["type"]
    return { type, schema, address: accountSubject(ACCOUNT_ID, type), parameters: accountParameters, channel: type }
  }),
  ...IdempotencyEvent.members.map((schema): MessageKind => {
    const type = typeOf(schema)
    return { type, schema, address: idempotencySubject(DIGEST), parameters: idempotencyParameters, channel: "idempotency" }
  }),
  ...WebhookEvent.members.map((schema): MessageKind => {
    const type = typeOf(schema) as WebhookEvent["type"]
    return { type, schema, address: webhookSubject(WEBHOOK_ID, webhookSubjectType[type]), parameters: webhookParameters, channel: type }
  }),
]

type Json = Record<string, unknown>

const isRaw = (schema: MessageKind["schema"]): schema is RawBytes => "raw" in schema

// Events may gain optional fields (never lose or rename one): consumers must not refuse unknown fields.
const openToAdditions = (schema: unknown): unknown => {
  if (Array.isArray(schema)) return schema.map(openToAdditions)
  if (typeof schema !== "object" || schema === null) return schema
  const out: Json = {}
  for (const [key, value] of Object.entries(schema)) {
    if (key === "additionalProperties" && value === false) continue
    // Effect names `unknown` with an $id; repeated, it would be one schema id declared many times.
    if (key === "$id" && value === "/schemas/unknown") continue
    out[key] = openToAdditions(value)
  }
  return out
}

const headersSchema = (): Json => ({
  type: "object",
  properties: Object.fromEntries(documentedHeaders.map((h) => [h.name, { type: "string", description: h.description }])),
  required: documentedHeaders.filter((h) => h.always).map((h) => h.name),
})

/**
 * The AsyncAPI 3 document of the event log: every subject pattern, every event type's payload and
 * the headers, generated from the event Schemas so that it cannot drift from what is published.
 */
export const asyncApiDocument = (version: string): Json => {
  const kinds = messageKinds()
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const payloads = kinds.map((k) =>
    isRaw(k.schema)
      ? { type: "string", format: "binary" }
      : openToAdditions(JSONSchema.fromAST(k.schema.ast, { definitions, definitionPath: "#/components/schemas/" })),
  )
  const channels: Json = {}
  const operations: Json = {}
  const messages: Json = {}
  kinds.forEach((k, i) => {
    const channel = (channels[k.channel] ??= {
      address: k.address,
      parameters: Object.fromEntries(Object.entries(k.parameters).map(([name, description]) => [name, { description }])),
      messages: {},
    }) as { messages: Json }
    channel.messages[k.type] = { $ref: `#/components/messages/${k.type}` }
    const operation = (operations[`receive_${k.channel}`] ??= {
      action: "receive",
      summary: `Consume the events on ${k.address}`,
      channel: { $ref: `#/channels/${k.channel}` },
      messages: [],
    }) as { messages: Array<Json> }
    operation.messages.push({ $ref: `#/channels/${k.channel}/messages/${k.type}` })
    const description = isRaw(k.schema) ? k.schema.description : k.schema.ast.annotations[SchemaAST.DescriptionAnnotationId]
    messages[k.type] = {
      name: k.type,
      title: k.type,
      contentType: isRaw(k.schema) ? k.schema.contentType : "application/json",
      headers: { $ref: "#/components/schemas/Headers" },
      payload: payloads[i],
      ...(description === undefined ? {} : { description }),
    }
  })
  return {
    asyncapi: "3.1.0",
    info: {
      title: "Sluice event log",
      version,
      description:
        "Every change to a batch, a response, a stream, an uploaded file, an account, an idempotency key or a webhook is an event stored on its own subject of the JetStream stream `SLUICE` " +
        "(or the embedded log's table, with the same subjects and headers). `batch.>` takes every batch event, " +
        "`batch.<batch_id>.>` one batch's whole history, `batch.*.<event_type>` one type across all batches. " +
        "Row events (`row_started`, `row_retrying`, `row_completed`, `row_failed`, `row_cancelled`) are carried in lane windows, " +
        "one message holding many of a model's row events of a batch, on `batch.<batch_id>.lane.<lane>`: `batch.*.lane.*` takes every row event. " +
        "A queued response (background, a stream's item, flex) runs as a batch of one row with the same events, on `response.<response_id>.<event_type>` " +
        "and `response.<response_id>.lane.<lane>` (`response.>` takes them all); its `batch_created` carries `response`. " +
        "A stream's own events are on `stream.<stream_id>.<event_type>`; its items are responses naming it. " +
        "An uploaded file's events are on `file.<file_id>.<event_type>`; its bytes are raw parts on `file.<file_id>.part` " +
        "(`application/octet-stream`, not JSON), appended before `file_created`, which names them. " +
        "Times are Unix milliseconds. Events are never renamed and lose no field; new types and optional fields may be added.",
    },
    defaultContentType: "application/json",
    servers: {
      nats: {
        host: "127.0.0.1:4222",
        protocol: "nats",
        description: "The NATS server given to Sluice as NATS_URL; the stream is `SLUICE`",
      },
    },
    channels,
    operations,
    components: {
      schemas: { Headers: headersSchema(), ...openToAdditions(definitions) as Json },
      messages,
    },
  }
}
