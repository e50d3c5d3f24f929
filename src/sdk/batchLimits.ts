import { DefaultCreateLimits, MAX_BODY_BYTES } from "../domain/batch/createLimits.js"
import type { SplitLimits } from "../domain/jsonl/splitBatches.js"
import type { Priority } from "../domain/scheduling/priority.js"

/** The server's own create limits: at most this many rows and bytes in one `POST /v1/batches`. */
export const serverBatchLimits: SplitLimits = { maxRows: DefaultCreateLimits.maxRequests, maxBodyBytes: MAX_BODY_BYTES }

/** What a create body carries besides its rows. */
export interface BatchEnvelope {
  readonly metadata?: Record<string, string> | undefined
  readonly priority?: Priority | undefined
}

/** The bytes a create body has besides its rows, exactly as `createBody` serializes it. */
export const envelopeBytes = (envelope: BatchEnvelope) => Buffer.byteLength(JSON.stringify(createBody([], envelope)), "utf8")

export const createBody = <Row>(requests: ReadonlyArray<Row>, { metadata, priority }: BatchEnvelope) => ({
  requests,
  ...(metadata === undefined ? {} : { metadata }),
  ...(priority === undefined ? {} : { priority }),
})
