import { Either } from "effect"
import { isObject } from "../json.js"
import { CreateRejected } from "./validateCreate.js"

/** The row statuses a final batch's rows end in; a rerun picks among them. */
export const RerunnableStatuses = ["completed", "failed", "expired", "cancelled"] as const
export type RerunnableStatus = (typeof RerunnableStatuses)[number]
export const defaultRerunStatuses: ReadonlyArray<RerunnableStatus> = ["failed", "expired", "cancelled"]

export interface RerunRequest {
  readonly statuses: ReadonlyArray<RerunnableStatus>
  /** Only rows whose error has one of these codes; every row of the statuses when absent. */
  readonly errorCodes: ReadonlyArray<string> | undefined
  /** Absent: the new batch keeps the original's metadata. */
  readonly metadata: unknown
  /** Absent: the new batch keeps the original's priority. Checked as a create checks it. */
  readonly priority: unknown
}

export interface RerunCandidate {
  readonly status: string
  readonly errorCode: string | null
}

const reject = (message: string, param: string) => Either.left(new CreateRejected({ message, param }))
const known: ReadonlySet<string> = new Set(RerunnableStatuses)
const fields: ReadonlySet<string> = new Set(["statuses", "error_codes", "metadata", "priority"])

/** The body of `POST /v1/batches/{id}/rerun`: every field optional; metadata and priority are checked as a create checks them. */
export const parseRerunRequest = (input: unknown): Either.Either<RerunRequest, CreateRejected> => {
  if (!isObject(input)) return reject("The request body must be a JSON object with optional 'statuses', 'error_codes', 'metadata' and 'priority'", "body")
  for (const name of Object.keys(input)) {
    if (!fields.has(name)) return reject(`Unknown field '${name}': a rerun takes 'statuses', 'error_codes', 'metadata' and 'priority'`, name)
  }
  const statuses = input["statuses"] ?? defaultRerunStatuses
  if (!Array.isArray(statuses) || statuses.length === 0) {
    return reject(`'statuses' must be a non-empty array of ${RerunnableStatuses.join(", ")}`, "statuses")
  }
  for (const [i, status] of statuses.entries()) {
    if (typeof status !== "string" || !known.has(status)) {
      return reject(`statuses[${i}] must be one of ${RerunnableStatuses.join(", ")}, got ${JSON.stringify(status)}`, `statuses[${i}]`)
    }
  }
  const codes = input["error_codes"]
  if (codes !== undefined && (!Array.isArray(codes) || codes.length === 0)) {
    return reject("'error_codes' must be a non-empty array of error codes such as timeout", "error_codes")
  }
  for (const [i, code] of (codes ?? []).entries()) {
    if (typeof code !== "string" || !/^[a-z0-9_]{1,64}$/.test(code)) {
      return reject(`error_codes[${i}] must be an error code such as timeout, got ${JSON.stringify(code)}`, `error_codes[${i}]`)
    }
  }
  return Either.right({
    statuses: statuses as Array<RerunnableStatus>,
    errorCodes: codes as Array<string> | undefined,
    metadata: input["metadata"],
    priority: input["priority"],
  })
}

/** Whether a row of the final batch is run again. */
export const isRerun = (request: RerunRequest, row: RerunCandidate): boolean =>
  (request.statuses as ReadonlyArray<string>).includes(row.status) &&
  (request.errorCodes === undefined || (row.errorCode !== null && request.errorCodes.includes(row.errorCode)))

export const nothingToRerun = (batchId: string, request: RerunRequest) =>
  `No request of batch '${batchId}' has status ${request.statuses.join(" or ")}${
    request.errorCodes === undefined ? "" : ` with error code ${request.errorCodes.join(" or ")}`
  }; there is nothing to rerun`
