import { Schema } from "effect"
import { DefaultCreateLimits as Limits } from "../batch/createLimits.js"
import { BatchEndpoint } from "../batch/endpoint.js"
import { Priority } from "../scheduling/priority.js"

// Documentation only: the create handler validates with validateCreateBatch, whose messages name the row at fault.
export const ChatMessage = Schema.Struct(
  { role: Schema.String },
  Schema.Record({ key: Schema.String, value: Schema.Unknown }),
).annotations({ identifier: "ChatMessage" })

export const ChatCompletionBody = Schema.Struct(
  {
    model: Schema.String.annotations({ description: "A model ID from Available Models; auto models are refused" }),
    messages: Schema.NonEmptyArray(ChatMessage),
    stream: Schema.optional(Schema.Literal(false)),
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown }),
).annotations({
  identifier: "ChatCompletionBody",
  description: "A chat-completion request body, exactly as sent to /v1/chat/completions",
})

export const EmbeddingsRequestBody = Schema.Struct(
  {
    model: Schema.String.annotations({ description: "A model ID from Available Models that serves /v1/embeddings" }),
    input: Schema.Union(Schema.String, Schema.Array(Schema.String), Schema.Array(Schema.Number), Schema.Array(Schema.Array(Schema.Number))).annotations({
      description: "A text, or up to 2048 texts, token ids (one tokenized text) or token-id arrays",
    }),
    encoding_format: Schema.optional(Schema.Literal("float", "base64")),
    dimensions: Schema.optional(Schema.Int.pipe(Schema.positive())),
    user: Schema.optional(Schema.String),
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown }),
).annotations({ identifier: "EmbeddingsRequestBody", description: "An embeddings request body: a row of a batch whose endpoint is /v1/embeddings" })

export const ResponsesRequestBody = Schema.Struct(
  {
    model: Schema.String.annotations({ description: "A model ID from Available Models" }),
    input: Schema.Union(Schema.String, Schema.NonEmptyArray(Schema.Record({ key: Schema.String, value: Schema.Unknown }))),
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown }),
).annotations({
  identifier: "ResponsesRequestBody",
  description: "A Responses API request body: a row of a batch whose endpoint is /v1/responses (its result is a Response object), or a chat row converted to chat form at create",
})

export const BatchRequestInput = Schema.Struct({
  custom_id: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(Limits.maxCustomIdLength)).annotations({
    description: "Your name for the request, unique within the batch",
  }),
  method: Schema.optional(Schema.Literal("POST")),
  url: Schema.optional(BatchEndpoint).annotations({
    description: "The endpoint the row calls, the same for every row of a batch (the first a row names; /v1/chat/completions when none does)",
  }),
  body: Schema.Union(ChatCompletionBody, EmbeddingsRequestBody, ResponsesRequestBody),
}).annotations({ identifier: "BatchRequestInput" })

export const CreateBatchPayload = Schema.Struct({
  requests: Schema.Array(BatchRequestInput).pipe(Schema.minItems(1), Schema.maxItems(Limits.maxRequests)),
  metadata: Schema.optional(
    Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.String })).annotations({
      description: `Up to ${Limits.maxMetadataPairs} string pairs; keys up to ${Limits.maxMetadataKeyLength} characters, values up to ${Limits.maxMetadataValueLength}`,
    }),
  ),
  completion_window: Schema.optional(Schema.Unknown.annotations({ description: "Ignored" })),
  priority: Schema.optional(Schema.NullOr(Priority)).annotations({
    description:
      "Its rows' priority on their models (default standard; also with `input_file_id`); above the account's `max_priority` answers 403. An addition to the contract",
  }),
}).annotations({ identifier: "CreateBatchPayload" })

export interface CreateBatchPayload extends Schema.Schema.Type<typeof CreateBatchPayload> {}
