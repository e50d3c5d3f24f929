import { Schema } from "effect"
import { Priority } from "../scheduling/priority.js"
import { WaitingOn } from "../waiting/waitingOn.js"

/*
 * The Response object of OpenAI's Responses API, in the subset both sference's SDK (pydantic, exact
 * literal sets) and OpenAI's clients accept: only these output item types, only output_text parts,
 * token counts never null.
 */

export const ResponseStatus = Schema.Literal("in_progress", "completed", "failed", "cancelled", "incomplete").annotations({
  identifier: "ResponseStatus",
})
export type ResponseStatus = typeof ResponseStatus.Type

export const ItemStatus = Schema.Literal("in_progress", "completed", "incomplete")

export const OutputText = Schema.Struct({
  type: Schema.Literal("output_text"),
  text: Schema.String,
  annotations: Schema.Array(Schema.Unknown),
})

export const MessageItem = Schema.Struct({
  type: Schema.Literal("message"),
  id: Schema.String.annotations({ description: "msg_…" }),
  status: ItemStatus,
  role: Schema.Literal("assistant"),
  content: Schema.Array(OutputText),
}).annotations({ identifier: "ResponseOutputMessage" })

export const ReasoningItem = Schema.Struct({
  type: Schema.Literal("reasoning"),
  id: Schema.String.annotations({ description: "rs_…" }),
  summary: Schema.Array(Schema.Struct({ type: Schema.Literal("summary_text"), text: Schema.String })),
}).annotations({
  identifier: "ResponseReasoningItem",
  description: "The model's reasoning, when its server gives it (`reasoning_content` or `reasoning` on the chat message)",
})

export const FunctionCallItem = Schema.Struct({
  type: Schema.Literal("function_call"),
  id: Schema.String.annotations({ description: "fc_…" }),
  call_id: Schema.String,
  name: Schema.String,
  arguments: Schema.String.annotations({ description: "The arguments as the model wrote them: a JSON text" }),
  status: ItemStatus,
}).annotations({ identifier: "ResponseFunctionToolCall" })

export const OutputItem = Schema.Union(ReasoningItem, MessageItem, FunctionCallItem)
export type OutputItem = typeof OutputItem.Type

const Tokens = Schema.NonNegativeInt

export const ResponseUsage = Schema.Struct({
  input_tokens: Tokens,
  input_tokens_details: Schema.Struct({ cached_tokens: Tokens, cache_write_tokens: Tokens }),
  output_tokens: Tokens,
  output_tokens_details: Schema.Struct({ reasoning_tokens: Tokens }),
  total_tokens: Tokens,
}).annotations({
  identifier: "ResponseUsage",
  description:
    "The upstream's usage: prompt tokens as input, completion tokens as output, its total (else their sum); a detail is 0 where the upstream gave none",
})
export interface ResponseUsage extends Schema.Schema.Type<typeof ResponseUsage> {}

export const ResponseError = Schema.Struct({
  code: Schema.Literal("server_error", "rate_limit_exceeded", "invalid_prompt"),
  message: Schema.String,
}).annotations({ identifier: "ResponseError" })
export interface ResponseError extends Schema.Schema.Type<typeof ResponseError> {}

export const IncompleteReason = Schema.Literal("max_output_tokens", "content_filter")

export const ResponseObject = Schema.Struct({
  id: Schema.String.annotations({ description: "resp_…" }),
  object: Schema.Literal("response"),
  created_at: Schema.Int.annotations({ description: "Unix seconds: when the request arrived" }),
  completed_at: Schema.NullOr(Schema.Int).annotations({ description: "Unix seconds: when it completed; null unless completed" }),
  status: ResponseStatus,
  background: Schema.Boolean,
  error: Schema.NullOr(ResponseError),
  incomplete_details: Schema.NullOr(Schema.Struct({ reason: IncompleteReason })),
  instructions: Schema.NullOr(Schema.String),
  max_output_tokens: Schema.NullOr(Schema.Int),
  model: Schema.String,
  output: Schema.Array(OutputItem),
  parallel_tool_calls: Schema.Boolean,
  temperature: Schema.NullOr(Schema.Number),
  text: Schema.Unknown,
  tool_choice: Schema.Unknown,
  tools: Schema.Array(Schema.Unknown),
  top_p: Schema.NullOr(Schema.Number),
  service_tier: Schema.Literal("default", "flex").annotations({ description: "The tier that served it" }),
  usage: Schema.optional(ResponseUsage).annotations({ description: "Absent when no answer came back (failed)" }),
  metadata: Schema.Record({ key: Schema.String, value: Schema.String }),
  // OpenAI's Response has no `priority` (its `service_tier: "priority"` is a tier, answered here as `default`), and both
  // sference's and OpenAI's clients ignore a field they do not know: an addition, on queued responses only.
  priority: Schema.optional(Priority).annotations({
    description:
      "Queued responses only (background, or an item of a stream): the priority it waits at among its model's queued work, " +
      "its own `priority` else its stream's, default standard. Absent on interactive and flex responses. An addition to the contract",
  }),
  waiting_on: Schema.optional(Schema.NullOr(WaitingOn)).annotations({
    description:
      "Queued responses only (background, or an item of a stream), as `priority`: why it has not started, or null once it runs or is final. An addition to the contract",
  }),
}).annotations({ identifier: "Response" })
export interface ResponseObject extends Schema.Schema.Type<typeof ResponseObject> {}

export const ResponseList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(ResponseObject),
  first_id: Schema.NullOr(Schema.String),
  last_id: Schema.NullOr(Schema.String),
  has_more: Schema.Boolean,
}).annotations({ identifier: "ResponseList" })
export interface ResponseList extends Schema.Schema.Type<typeof ResponseList> {}
