import { type BatchStatus, FinalBatchStatuses } from "../api/BatchStatus.js"

/*
 * A file-based batch's output and error files are views over the results Sluice keeps, not copies: their
 * ids are derived from the batch's, so any instance can name and read them with no event of their own,
 * and they go when the batch goes.
 */

const BATCH_ID = /^batch_([0-9a-f]+)$/
const VIEW_ID = /^file-(out|err)-([0-9a-f]+)$/

export type BatchFileKind = "output" | "error"

export const batchFileId = (batchId: string, kind: BatchFileKind): string | undefined => {
  const hex = BATCH_ID.exec(batchId)?.[1]
  return hex === undefined ? undefined : `file-${kind === "output" ? "out" : "err"}-${hex}`
}

/** The batch and kind a view's id names; undefined for any other id (an uploaded file's). */
export const batchOfFileId = (fileId: string): { readonly batchId: string; readonly kind: BatchFileKind } | undefined => {
  const m = VIEW_ID.exec(fileId)
  return m === null ? undefined : { batchId: `batch_${m[2]}`, kind: m[1] === "out" ? "output" : "error" }
}

export interface BatchFileFacts {
  readonly id: string
  readonly status: BatchStatus
  readonly input_file_id: string | null
  readonly total: number
  readonly completed: number
}

/**
 * OpenAI's rule: a final batch read from a file names an output file when some rows succeeded and an
 * error file when some did not (failed, expired or cancelled); an inline batch names neither.
 */
export const batchFiles = (b: BatchFileFacts): { readonly output_file_id: string | null; readonly error_file_id: string | null } => {
  if (b.input_file_id === null || !FinalBatchStatuses.has(b.status)) {
    return { output_file_id: null, error_file_id: null }
  }
  return {
    output_file_id: b.completed > 0 ? (batchFileId(b.id, "output") ?? null) : null,
    error_file_id: b.total - b.completed > 0 ? (batchFileId(b.id, "error") ?? null) : null,
  }
}
