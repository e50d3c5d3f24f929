import type { Either } from "effect"
import type { BatchFileRow } from "../domain/jsonl/batchFileLines.js"
import { type BatchRowTooLarge, type SplitLimits, splitBatches as splitWithin } from "../domain/jsonl/splitBatches.js"
import { serverBatchLimits } from "./batchLimits.js"

export type {
  BatchDeleted,
  BatchList,
  BatchObject,
  BatchStatus,
  BatchUsage,
  OpenAIErrorBody,
  RequestCounts,
  ResultLine,
  ResultsPage,
  ResultStatus,
} from "../domain/api/index.js"
export { FinalBatchStatuses } from "../domain/api/index.js"
export {
  type BatchFileOptions,
  type BatchFileRow,
  BatchFileLineError,
  parseBatchFile,
  parseBatchRecords,
} from "../domain/jsonl/batchFileLines.js"
export { BatchRowTooLarge, type SplitLimits } from "../domain/jsonl/splitBatches.js"
export type { CompletionEvent, CompletionEventList } from "../domain/api/CompletionEvent.js"
export { type CheckpointStore, checkpointKey, defaultCheckpointsFile, type FileCheckpointStore, fileCheckpoints } from "./checkpoints.js"
export type { IterResponsesEventsOptions, ResponsesEventsPageOptions } from "./responsesEvents.js"
export type {
  ListResponsesOptions,
  Priority,
  ResponseCreateRequest,
  ResponseInputItem,
  ResponseList,
  ResponseObject,
  ResponseStatus,
  ResponseUsage,
  StreamCreateRequest,
  StreamDetail,
  StreamInput,
  StreamList,
  StreamPatch,
  StreamSubmission,
  StreamSubmitOptions,
  StreamSummary,
  StreamWindow,
} from "./responseTypes.js"
export { defaultRetryPolicy, type OnRetry, type RetryNotice, type RetryPolicy } from "./backoff.js"
export type { BatchInput, BatchRequest } from "./batchInput.js"
export { serverBatchLimits } from "./batchLimits.js"
export {
  type BatchStreamEvent,
  type BatchStreamEventData,
  type BatchStreamEventType,
  resultLineFromEvent,
} from "./batchStreamEvent.js"
export {
  BatchInputError,
  PartialSubmitError,
  ResultsFileError,
  SluiceApiError,
  SluiceConnectionError,
  StreamSubmitError,
  WaitTimeoutError,
} from "./errors.js"
export type {
  BatchEndpoint,
  BatchOutputLine,
  FileBatchRequest,
  FileDeleted,
  FileList,
  FileObject,
  FileUpload,
  ListFilesOptions,
} from "./files.js"
export * from "./SluiceAdmin.js"
export {
  type Batch,
  type BatchEstimate,
  type RerunOptions,
  type RunOptions,
  type SluiceClientOptions,
  SluiceClient,
  type SubmitOnceOptions,
  type WaitOptions,
} from "./SluiceClient.js"

/** Cuts rows, in order, into as few batches as fit the limits: by default the server's own. */
export const splitBatches = <Row extends BatchFileRow>(
  rows: ReadonlyArray<Row>,
  limits: SplitLimits = serverBatchLimits,
): Either.Either<ReadonlyArray<ReadonlyArray<Row>>, BatchRowTooLarge> => splitWithin(rows, limits)
