import { DefaultCreateLimits, MAX_BODY_BYTES } from "../domain/batch/createLimits.js"
import type { SplitLimits } from "../domain/jsonl/splitBatches.js"

/** The server's own create limits: at most this many rows and bytes in one `POST /v1/batches`. */
export const serverBatchLimits: SplitLimits = { maxRows: DefaultCreateLimits.maxRequests, maxBodyBytes: MAX_BODY_BYTES }

/** The bytes a create body has besides its rows, exactly as `createBody` serializes it. */
export const envelopeBytes = (metadata: Record<string, string> | undefined) =>
  Buffer.byteLength(JSON.stringify(createBody([], metadata)), "utf8")

export const createBody = <Row>(requests: ReadonlyArray<Row>, metadata: Record<string, string> | undefined) =>
  metadata === undefined ? { requests } : { requests, metadata }
