import type { ResponseObject } from "../domain/api/ResponseObject.js"
import type { StreamDetail } from "../domain/api/StreamObject.js"
import { BodyRejection } from "../domain/response/chatForm.js"
import { toResponsesForm } from "../domain/response/responsesForm.js"
import { readBatchSource } from "./batchInput.js"
import { BatchInputError, StreamSubmitError } from "./errors.js"
import type { StreamInput, StreamSubmission, StreamSubmitOptions } from "./responseTypes.js"

export interface StreamCalls {
  readonly getStream: (id: string) => Promise<StreamDetail>
  /** The custom_ids of the stream's items, every page. */
  readonly customIds: (streamId: string) => Promise<ReadonlySet<string>>
  readonly create: (body: Record<string, unknown>, signal: AbortSignal | undefined) => Promise<ResponseObject>
}

const lineCount = (n: number) => `${n} ${n === 1 ? "line" : "lines"}`

interface Line {
  readonly line: number
  readonly customId: string
  readonly body: Record<string, unknown>
}

/**
 * Each line of the input as one `POST /v1/responses` naming the stream and the line's custom_id. The
 * server keeps no key for a response, so the stream's own items say what an earlier run sent: a line
 * whose custom_id is there already is skipped. Every line is converted before anything is sent; the
 * first line the server refuses ends the run once the lines in flight are answered.
 */
export const submitLines = async (
  calls: StreamCalls,
  streamId: string,
  input: StreamInput,
  options: StreamSubmitOptions,
): Promise<StreamSubmission> => {
  const { rows, lines, source } = await readBatchSource(input)
  const all: Array<Line> = rows.map((row, i) => {
    const line = lines[i]!
    const request = toResponsesForm(row.body)
    if (request instanceof BodyRejection) throw new BatchInputError(`${source}: line ${line}: ${request.detail}`, line)
    const own = request["metadata"]
    const metadata = { ...(typeof own === "object" && own !== null ? own : {}), ...input.metadata, stream_id: streamId, custom_id: row.custom_id }
    return { line, customId: row.custom_id, body: { ...request, metadata, ...(input.priority === undefined ? {} : { priority: input.priority }) } }
  })

  const stream = await calls.getStream(streamId)
  const there = await calls.customIds(streamId)
  const todo = all.filter((l) => !there.has(l.customId))
  const skipped = all.length - todo.length
  if (todo.length > 0 && stream.status !== "open") {
    const missing = `${lineCount(todo.length)} of the input ${todo.length === 1 ? "is" : "are"} not in it`
    throw new StreamSubmitError(`Stream '${streamId}' is ${stream.status} and takes no new items: ${missing}`, { sent: 0, skipped })
  }
  options.onPlanned?.({ lines: all.length, skipped })

  let next = 0
  let sent = 0
  let failed: { readonly line: Line; readonly error: unknown } | undefined
  const send = async () => {
    while (failed === undefined && next < todo.length) {
      const line = todo[next++]!
      try {
        const response = await calls.create(line.body, options.signal)
        sent++
        options.onSent?.(response, line.customId)
      } catch (error) {
        if (options.signal?.aborted) throw error
        failed ??= { line, error }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(Math.max(1, options.concurrency ?? 8), todo.length) }, send))
  if (failed !== undefined) {
    const { line, error } = failed
    const why = error instanceof Error ? error.message : String(error)
    throw new StreamSubmitError(
      `${source}: line ${line.line} (custom_id "${line.customId}"): ${why}; ${lineCount(sent)} sent, ${skipped} in the stream already: run again to send the rest`,
      { sent, skipped, line: line.line, cause: error },
    )
  }
  return { streamId, lines: all.length, skipped, sent }
}
