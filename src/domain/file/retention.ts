/*
 * How long an uploaded file is kept. OpenAI's rule: `expires_after` {anchor: "created_at", seconds from
 * 3600 to 2592000} sets it; without one a batch file expires after 30 days.
 */

export const MIN_EXPIRES_AFTER_S = 3_600
export const MAX_EXPIRES_AFTER_S = 2_592_000
/** A batch file uploaded without `expires_after` is kept 30 days, as OpenAI keeps one. */
export const DEFAULT_BATCH_FILE_RETENTION_S = 30 * 86_400

export interface ExpiresAfter {
  readonly anchor: "created_at"
  readonly seconds: number
}

/** When a file uploaded at `createdAtMs` expires (Unix ms). */
export const expiresAt = (createdAtMs: number, expiresAfter: ExpiresAfter | undefined): number =>
  createdAtMs + (expiresAfter?.seconds ?? DEFAULT_BATCH_FILE_RETENTION_S) * 1000

export interface FileStandingForRetention {
  readonly status: "processed" | "deleted"
  readonly expires_at: number | null
}

/** When retention deletes and purges a file: at its `expires_at`; one already deleted is purged by its deletion. */
export const purgeDueAt = (file: FileStandingForRetention): number | undefined =>
  file.status === "processed" && file.expires_at !== null ? file.expires_at : undefined
