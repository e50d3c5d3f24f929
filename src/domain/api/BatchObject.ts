import { Schema } from "effect"
import { BatchStatus } from "./BatchStatus.js"
import { BatchEndpoint } from "../batch/endpoint.js"
import { Priority } from "../scheduling/priority.js"
import { WaitingOn } from "../waiting/waitingOn.js"

const UnixSeconds = Schema.Int.annotations({ description: "Unix seconds" })
const UnixSecondsOrNull = Schema.NullOr(UnixSeconds)

export const RequestCounts = Schema.Struct({
  total: Schema.NonNegativeInt,
  completed: Schema.NonNegativeInt,
  failed: Schema.NonNegativeInt,
}).annotations({ identifier: "RequestCounts" })

export interface RequestCounts extends Schema.Schema.Type<typeof RequestCounts> {}

export const BatchError = Schema.Struct({
  code: Schema.String.annotations({ examples: ["owner_unauthorized"] }),
  message: Schema.String,
}).annotations({ identifier: "BatchError", description: "Why the whole batch failed" })

export interface BatchError extends Schema.Schema.Type<typeof BatchError> {}

export const BatchMetadata = Schema.Record({ key: Schema.String, value: Schema.String }).annotations({
  identifier: "BatchMetadata",
})

const Tokens = Schema.NonNegativeInt

export const BatchUsage = Schema.Struct({
  input_tokens: Tokens,
  input_tokens_details: Schema.Struct({ cached_tokens: Tokens }),
  output_tokens: Tokens,
  output_tokens_details: Schema.Struct({ reasoning_tokens: Tokens }),
  total_tokens: Tokens,
}).annotations({
  identifier: "BatchUsage",
  description:
    "The tokens of the batch's completed rows, summed from each row's `usage` (prompt as input, completion as output; a detail is 0 where the upstream gave none); zeros until a row completes, and unchanging once the batch is final. OpenAI's batch `usage`; an addition to the contract",
})

export interface BatchUsage extends Schema.Schema.Type<typeof BatchUsage> {}

// Field order is the seed's sample order: encoding preserves it, so responses read like OpenAI's.
export const BatchObject = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("batch"),
  endpoint: BatchEndpoint,
  errors: Schema.Null,
  input_file_id: Schema.NullOr(Schema.String).annotations({
    description: "The uploaded file (`POST /v1/files`) the rows were read from; null for a batch whose rows came in `requests`",
  }),
  completion_window: Schema.String,
  status: BatchStatus,
  output_file_id: Schema.NullOr(Schema.String).annotations({
    description: "Once a batch read from a file is final with some rows completed: the file of their results, in OpenAI's output-line format; always null for an inline batch",
  }),
  error_file_id: Schema.NullOr(Schema.String).annotations({
    description: "Once a batch read from a file is final with some rows failed, expired or cancelled: the file of those rows; always null for an inline batch",
  }),
  created_at: UnixSeconds,
  in_progress_at: UnixSecondsOrNull,
  expires_at: UnixSeconds,
  finalizing_at: UnixSecondsOrNull,
  completed_at: UnixSecondsOrNull,
  failed_at: UnixSecondsOrNull,
  expired_at: UnixSecondsOrNull,
  cancelling_at: UnixSecondsOrNull,
  cancelled_at: UnixSecondsOrNull,
  request_counts: RequestCounts,
  metadata: Schema.NullOr(BatchMetadata),
  cost_usd: Schema.NonNegative,
  error: Schema.NullOr(BatchError),
  rerun_of: Schema.NullOr(Schema.String).annotations({
    description: "The batch whose rows this one runs again (`POST /v1/batches/{batch_id}/rerun`); an addition to the contract",
  }),
  priority: Priority.annotations({
    description:
      "Its rows' priority on their models (`priority` on create, default standard; a rerun keeps the original's): high, standard or background (docs/scheduling.md). An addition to the contract",
  }),
  rows_ahead: Schema.NullOr(Schema.NonNegativeInt).annotations({
    description:
      "While the batch is not final: rows of other batches the turn-taking will start before this batch's last row, per model, summed; null once final. An addition to the contract",
  }),
  estimated_completion_at: UnixSecondsOrNull.annotations({
    description:
      "While the batch is not final: when its last row should finish, from each model's measured rate and the turns; null with no rate measured yet, and once final. An addition to the contract",
  }),
  usage: BatchUsage,
  waiting_on: Schema.NullOr(WaitingOn).annotations({
    description:
      "While the batch is not final: why its rows are not running at full speed, or null while they are; null once final and in an `as_of` read. An addition to the contract",
  }),
}).annotations({ identifier: "BatchObject" })

export interface BatchObject extends Schema.Schema.Type<typeof BatchObject> {}
