import { Schema } from "effect"

/*
 * A file's events are a storage format like the batch events: add, never rename. An uploaded file's
 * bytes are not in its events: they are raw parts on `file.<id>.part`, appended before `file_created`,
 * which says where they are. Times are Unix milliseconds.
 */

/** The purposes OpenAI's files take; Sluice stores `batch` files only. */
export const OpenAIFilePurposes = ["assistants", "batch", "fine-tune", "vision", "user_data", "evals"] as const
export const FilePurpose = Schema.Literal("batch")
export type FilePurpose = typeof FilePurpose.Type

const Ids = { file_id: Schema.String, account_id: Schema.String }

export const FileCreated = Schema.Struct({
  type: Schema.Literal("file_created"),
  ...Ids,
  key_id: Schema.String,
  filename: Schema.String,
  purpose: FilePurpose,
  bytes: Schema.Number,
  lines: Schema.Number,
  created_at: Schema.Number,
  /** When retention purges it; null: kept until deleted. */
  expires_at: Schema.NullOr(Schema.Number),
  /** Where the content is: `parts` messages on `file.<id>.part`, from `first_seq` to `last_seq` (0 and 0 for an empty file). */
  content: Schema.Struct({ first_seq: Schema.Number, last_seq: Schema.Number, parts: Schema.Number }),
})

export const DeletionReason = Schema.Literal("deleted", "expired")
export type DeletionReason = typeof DeletionReason.Type

/** `DELETE /v1/files/{id}`, or its `expires_at` passed: the file is gone for reads from here on. */
export const FileDeleted = Schema.Struct({ type: Schema.Literal("file_deleted"), ...Ids, at: Schema.Number, reason: DeletionReason })

/**
 * The file's tombstone: written once `file.<id>.>` has been purged, and then the only event on it. `at` is
 * when it was purged; no name, no content. Guarded by an expected subject sequence of 0 but with no
 * message id: a purge does not clear JetStream's de-duplication window, which would drop the tombstone
 * written again after a crash.
 */
export const FilePurged = Schema.Struct({
  type: Schema.Literal("file_purged"),
  ...Ids,
  at: Schema.Number,
  created_at: Schema.Number,
  deleted_at: Schema.Number,
  reason: DeletionReason,
  /** Each purged subject's last hash-chain link (its `Sluice-Sha256`), for whoever kept a copy of the history. */
  chain_heads: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
})

export const FileEvent = Schema.Union(FileCreated, FileDeleted, FilePurged)
export type FileEvent = typeof FileEvent.Type
export type FileEventType = FileEvent["type"]
export type FileCreated = typeof FileCreated.Type

/** The only place file subjects are built: `file.<file_id>.<event type>`. */
export const fileSubject = (fileId: string, type: FileEventType) => `file.${fileId}.${type}`
/** Where an uploaded file's bytes are, in order: raw parts, not events. */
export const filePartSubject = (fileId: string) => `file.${fileId}.part`
export const isFilePartSubject = (subject: string) => subject.startsWith("file.") && subject.endsWith(".part")
/** One file's whole history. */
export const oneFile = (fileId: string) => `file.${fileId}.>`
/** A retried append of the same part is stored once. */
export const partMsgId = (fileId: string, index: number) => `${fileId}:part:${index}`
