import { Schema } from "effect"
import { QueuedResponse } from "../response/queuedResponse.js"
import { Priority } from "../scheduling/priority.js"
import { BatchEndpoint } from "./endpoint.js"

/*
 * The batch events are the storage format of the log: auditors replay them and
 * projections are rebuilt from them. Never rename or remove a type or field;
 * only add new types or optional fields. Times are Unix milliseconds; rows are
 * 0-based indexes in submission order.
 */

export const RowError = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  status: Schema.optional(Schema.Number),
})
export type RowError = typeof RowError.Type

export const RowResponse = Schema.Struct({
  status_code: Schema.Number,
  request_id: Schema.String,
  body: Schema.Unknown,
})
export type RowResponse = typeof RowResponse.Type

const Ids = { batch_id: Schema.String }
const RowIds = { batch_id: Schema.String, row: Schema.Number, attempt: Schema.Number, at: Schema.Number }

export const BatchCreated = Schema.Struct({
  type: Schema.Literal("batch_created"),
  ...Ids,
  account_id: Schema.String,
  key_id: Schema.String,
  created_at: Schema.Number,
  expires_at: Schema.Number,
  completion_window: Schema.String,
  metadata: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.String })),
  total: Schema.Number,
  models: Schema.Array(Schema.String),
  /** The final batch whose rows this one runs again (`POST /v1/batches/{id}/rerun`). */
  rerun_of: Schema.optional(Schema.String),
  /** Present when this is a response run as a batch of one row (src/domain/response/queuedResponse.ts). */
  response: Schema.optional(QueuedResponse),
  /** The endpoint every row calls; absent for chat completions (every batch stored before the others). */
  endpoint: Schema.optional(BatchEndpoint),
  /** The uploaded file (`file-…`) the rows were read from; absent for a batch whose rows came inline. */
  input_file_id: Schema.optional(Schema.String),
  /** Its rows' priority on their models; absent for `standard` (every batch stored before priorities existed). */
  priority: Schema.optional(Priority),
})

/**
 * The input rows travel in chunks: no log message may exceed the server's max payload. Each chunk's
 * request bodies are in the `row_bodies` event stored just before it, at the log position `bodies`
 * names; a chunk written before bodies had their own event carries each row's `body` inline instead.
 */
export interface AddedRow {
  readonly custom_id: string
  readonly model: string
  readonly body?: unknown
}
const isAddedRow = (u: unknown): u is AddedRow =>
  typeof u === "object" &&
  u !== null &&
  typeof (u as AddedRow).custom_id === "string" &&
  typeof (u as AddedRow).model === "string"
// One check over the whole array: decoding 50,000 structs element by element took longer than
// inserting them into the read model, and copied every one.
const AddedRows = Schema.declare(
  (u: unknown): u is ReadonlyArray<AddedRow> => Array.isArray(u) && u.every(isAddedRow),
  {
    identifier: "AddedRows",
    description: "an array of {custom_id: string, model: string, body?: unknown}",
    jsonSchema: {
      type: "array",
      items: {
        type: "object",
        required: ["custom_id", "model"],
        properties: { custom_id: { type: "string" }, model: { type: "string" }, body: {} },
      },
    },
  },
)

export const RowsAdded = Schema.Struct({
  type: Schema.Literal("rows_added"),
  ...Ids,
  first: Schema.Number,
  rows: AddedRows,
  bodies: Schema.optional(Schema.Struct({ first_seq: Schema.Number, seq: Schema.Number })),
})

/**
 * The request bodies of the rows from `first` on, in order: the bulk of a batch's bytes, in events
 * that no projection decodes. A model's actor reads them by their log position when it runs the rows.
 */
export const RowBodies = Schema.Struct({
  type: Schema.Literal("row_bodies"),
  ...Ids,
  first: Schema.Number,
  bodies: Schema.Array(Schema.Unknown),
})

export const BatchStarted = Schema.Struct({ type: Schema.Literal("batch_started"), ...Ids, at: Schema.Number })

export const RowStarted = Schema.Struct({ type: Schema.Literal("row_started"), ...RowIds })

export const RowRetrying = Schema.Struct({
  type: Schema.Literal("row_retrying"),
  ...RowIds,
  error: RowError,
  retry_at: Schema.Number,
})

export const RowCompleted = Schema.Struct({
  type: Schema.Literal("row_completed"),
  ...RowIds,
  response: RowResponse,
  cost_usd: Schema.Number,
})

export const RowFailed = Schema.Struct({ type: Schema.Literal("row_failed"), ...RowIds, error: RowError })

/** A running row whose attempt failed transiently after its batch was cancelled: it is not retried. */
export const RowCancelled = Schema.Struct({
  type: Schema.Literal("row_cancelled"),
  ...RowIds,
  error: Schema.NullOr(RowError),
})

/**
 * Every row not running and not finished at this point is cancelled. Readers count those rows from the
 * batch's state at this event's place in the log; `cancelled_rows` is the writer's count, for people.
 */
export const BatchCancelling = Schema.Struct({
  type: Schema.Literal("batch_cancelling"),
  ...Ids,
  at: Schema.Number,
  cancelled_rows: Schema.Number,
})

export const BatchCancelled = Schema.Struct({ type: Schema.Literal("batch_cancelled"), ...Ids, at: Schema.Number })
export const BatchCompleted = Schema.Struct({ type: Schema.Literal("batch_completed"), ...Ids, at: Schema.Number })

export const BatchFailure = Schema.Struct({ code: Schema.String, message: Schema.String })
export type BatchFailure = typeof BatchFailure.Type

/**
 * The batch's owner is no longer valid while rows run: every row neither running nor finished fails
 * with `batch_failed`, nothing starts again, and the batch keeps its status until its running rows
 * have settled; `batch_failed` follows then. `failed_rows` is the writer's count, for people.
 */
export const BatchFailing = Schema.Struct({
  type: Schema.Literal("batch_failing"),
  ...Ids,
  at: Schema.Number,
  error: BatchFailure,
  failed_rows: Schema.Number,
})

/** `batch_failing`'s counterpart for a completion window that closed while rows ran; `batch_expired` follows. */
export const BatchExpiring = Schema.Struct({
  type: Schema.Literal("batch_expiring"),
  ...Ids,
  at: Schema.Number,
  expired_rows: Schema.Number,
})

/**
 * The batch is failed, final, once no row runs. Written after `batch_failing` when its last running row
 * settles, or alone when nothing ran: every row neither running nor finished at this point fails then
 * (`failed_rows` is the writer's count, for people; readers count from the batch's state).
 */
export const BatchFailed = Schema.Struct({
  type: Schema.Literal("batch_failed"),
  ...Ids,
  at: Schema.Number,
  error: BatchFailure,
  failed_rows: Schema.Number,
})

/** `batch_failed`'s counterpart for the completion window: the rows it settles expire with `batch_expired`. */
export const BatchExpired = Schema.Struct({
  type: Schema.Literal("batch_expired"),
  ...Ids,
  at: Schema.Number,
  expired_rows: Schema.Number,
})

export const DeletionReason = Schema.Literal("deleted", "retention")
export type DeletionReason = typeof DeletionReason.Type

/** Written before the batch's history is purged. Version 2 (src/domain/versions): version 1 had no `reason` and meant `deleted`. */
export const BatchDeleted = Schema.Struct({
  type: Schema.Literal("batch_deleted"),
  v: Schema.optional(Schema.Literal(2)),
  ...Ids,
  at: Schema.Number,
  reason: DeletionReason,
})

/**
 * The batch's tombstone: written once its history (`batch_deleted` included) has been purged, and then
 * the only event on `batch.<id>.>`. It holds no request or result content.
 */
export const BatchPurged = Schema.Struct({
  type: Schema.Literal("batch_purged"),
  ...Ids,
  account_id: Schema.String,
  created_at: Schema.Number,
  deleted_at: Schema.Number,
  reason: DeletionReason,
  /** Each purged subject's last hash-chain link (its `Sluice-Sha256`), for whoever kept a copy of the history. */
  chain_heads: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  /**
   * What the batch's completed rows cost, by UTC day (`YYYY-MM-DD`): still part of the account's spending
   * that day, which a reader of the log after the purge (a replay) can count only from here.
   */
  spent: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.NonNegative })),
})

export const BatchEvent = Schema.Union(
  BatchCreated,
  RowBodies,
  RowsAdded,
  BatchStarted,
  RowStarted,
  RowRetrying,
  RowCompleted,
  RowFailed,
  RowCancelled,
  BatchCancelling,
  BatchCancelled,
  BatchCompleted,
  BatchFailing,
  BatchExpiring,
  BatchFailed,
  BatchExpired,
  BatchDeleted,
  BatchPurged,
)
export type BatchEvent = typeof BatchEvent.Type
export type BatchEventType = BatchEvent["type"]

/** Lifecycle events happen at most once per batch; the log guards that with an expected subject sequence of 0. */
export const onceOnlyTypes: ReadonlySet<BatchEventType> = new Set([
  "batch_created",
  "batch_started",
  "batch_cancelling",
  "batch_cancelled",
  "batch_completed",
  "batch_failing",
  "batch_expiring",
  "batch_failed",
  "batch_expired",
  "batch_deleted",
  "batch_purged",
])

export type RowEvent = Extract<BatchEvent, { readonly type: "row_started" | "row_retrying" | "row_completed" | "row_failed" | "row_cancelled" }>

export const rowEventTypes: ReadonlySet<BatchEventType> = new Set([
  "row_started",
  "row_retrying",
  "row_completed",
  "row_failed",
  "row_cancelled",
])

export const isRowEvent = (event: BatchEvent): event is RowEvent => rowEventTypes.has(event.type)
