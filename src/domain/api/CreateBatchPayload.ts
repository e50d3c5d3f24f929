import { Schema } from "effect"
import { DefaultCreateLimits as Limits } from "../batch/createLimits.js"

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

export const BatchRequestInput = Schema.Struct({
  custom_id: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(Limits.maxCustomIdLength)).annotations({
    description: "Your name for the request, unique within the batch",
  }),
  method: Schema.optional(Schema.Literal("POST")),
  url: Schema.optional(Schema.Literal("/v1/chat/completions")),
  body: ChatCompletionBody,
}).annotations({ identifier: "BatchRequestInput" })

export const CreateBatchPayload = Schema.Struct({
  requests: Schema.Array(BatchRequestInput).pipe(Schema.minItems(1), Schema.maxItems(Limits.maxRequests)),
  metadata: Schema.optional(
    Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.String })).annotations({
      description: `Up to ${Limits.maxMetadataPairs} string pairs; keys up to ${Limits.maxMetadataKeyLength} characters, values up to ${Limits.maxMetadataValueLength}`,
    }),
  ),
  completion_window: Schema.optional(Schema.Unknown.annotations({ description: "Ignored" })),
}).annotations({ identifier: "CreateBatchPayload" })

export interface CreateBatchPayload extends Schema.Schema.Type<typeof CreateBatchPayload> {}
