import { backoffDelayMs, type OnRetry, type RetryPolicy } from "./backoff.js"
import type { BatchStreamEvent } from "./batchStreamEvent.js"
import { describeCause, SluiceConnectionError } from "./errors.js"
import { SseDecoder } from "./sseDecoder.js"
import { sleep } from "./transport.js"

export interface FollowOptions {
  readonly lastEventId?: string
  readonly signal?: AbortSignal
}

const parseData = (data: string): unknown => {
  try {
    return JSON.parse(data)
  } catch {
    return data
  }
}

/**
 * The events of a Server-Sent Events stream, reconnecting through `connect` with the last event id
 * after a dropped connection, until the server ends the stream. Only an event that arrived whole
 * counts as seen: a reconnect asks again for one cut off mid-way.
 */
export async function* followEventStream(
  connect: (lastEventId: string | undefined) => Promise<Response>,
  url: string,
  retry: RetryPolicy,
  options: FollowOptions = {},
  onRetry?: OnRetry,
): AsyncGenerator<BatchStreamEvent> {
  let lastEventId = options.lastEventId
  let failures = 0
  let retryMs: number | undefined
  for (;;) {
    const response = await connect(lastEventId)
    if (response.body === null) return
    const decoder = new SseDecoder()
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
    let dropped: unknown
    try {
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>
        try {
          chunk = await reader.read()
        } catch (error) {
          dropped = error
          break
        }
        if (chunk.done) return
        for (const message of decoder.push(chunk.value)) {
          failures = 0
          lastEventId = message.id ?? lastEventId
          yield { id: message.id ?? "", type: message.event, data: parseData(message.data) } as BatchStreamEvent
        }
        retryMs = decoder.retryMs ?? retryMs
      }
    } finally {
      await reader.cancel().catch(() => undefined)
    }
    if (options.signal?.aborted) throw options.signal.reason
    if (failures >= retry.maxRetries) throw new SluiceConnectionError("GET", url, dropped)
    const delayMs = backoffDelayMs(failures++, retry, Math.random(), retryMs)
    onRetry?.({ method: "GET", url, reason: describeCause(dropped), retry: failures, maxRetries: retry.maxRetries, delayMs })
    await sleep(delayMs, options.signal)
  }
}
