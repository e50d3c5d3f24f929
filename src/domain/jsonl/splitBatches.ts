import { Either, Schema } from "effect"
import type { BatchFileRow } from "./batchFileLines.js"

export interface SplitLimits {
  readonly maxRows: number
  /** The most bytes one create body (`{"requests":[...],"metadata":...}`) may have. */
  readonly maxBodyBytes: number
  /** Bytes of the create body besides its rows and the commas between them: the envelope and the metadata. */
  readonly envelopeBytes?: number
}

/**
 * Room for the envelope with the largest valid metadata: 16 pairs of keys up to 64 and values up
 * to 512 characters, each character at most 6 bytes once JSON-escaped.
 */
export const defaultEnvelopeBytes = 64 * 1024

export class BatchRowTooLarge extends Schema.TaggedError<BatchRowTooLarge>()("BatchRowTooLarge", {
  custom_id: Schema.String,
  bytes: Schema.Int,
  maxBodyBytes: Schema.Int,
  message: Schema.String,
}) {}

export const rowBytes = (row: BatchFileRow) => Buffer.byteLength(JSON.stringify(row), "utf8")

/** The create body's size: its envelope plus its rows, a comma between each two. */
export const createBodyBytes = (rows: ReadonlyArray<BatchFileRow>, envelopeBytes: number) =>
  rows.reduce((sum, row) => sum + rowBytes(row), envelopeBytes + Math.max(0, rows.length - 1))

/** Cuts rows, in order, into as few consecutive batches as fit both limits, filling each before starting the next. */
export const splitBatches = <Row extends BatchFileRow>(
  rows: ReadonlyArray<Row>,
  limits: SplitLimits,
): Either.Either<ReadonlyArray<ReadonlyArray<Row>>, BatchRowTooLarge> => {
  const envelope = limits.envelopeBytes ?? defaultEnvelopeBytes
  const batches: Array<Array<Row>> = []
  let current: Array<Row> = []
  let currentBytes = envelope
  for (const row of rows) {
    const bytes = rowBytes(row)
    if (envelope + bytes > limits.maxBodyBytes) {
      return Either.left(
        new BatchRowTooLarge({
          custom_id: row.custom_id,
          bytes,
          maxBodyBytes: limits.maxBodyBytes,
          message: `Row ${JSON.stringify(row.custom_id)} is ${bytes} bytes: no create body of at most ${limits.maxBodyBytes} bytes can hold it`,
        }),
      )
    }
    if (current.length > 0 && (current.length >= limits.maxRows || currentBytes + 1 + bytes > limits.maxBodyBytes)) {
      batches.push(current)
      current = []
      currentBytes = envelope
    }
    currentBytes += (current.length === 0 ? 0 : 1) + bytes
    current.push(row)
  }
  if (current.length > 0) batches.push(current)
  return Either.right(batches)
}
