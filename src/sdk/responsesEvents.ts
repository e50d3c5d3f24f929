import type { CompletionEvent, CompletionEventList } from "../domain/api/CompletionEvent.js"
import { type CheckpointStore, checkpointKey, fileCheckpoints } from "./checkpoints.js"

export interface ResponsesEventsPageOptions {
  /** One stream's events; without it, the completions outside streams (batch rows). */
  readonly streamId?: string
  /** 1 to 100; the server's default is 20. */
  readonly limit?: number
  /** The events after this completion_id, oldest first. */
  readonly startingAfter?: string
  /** The events before this completion_id, newest first. */
  readonly endingBefore?: string
  /** With nothing to answer yet, the server waits up to this long for an event (it caps it at 25 s). */
  readonly waitMs?: number
  readonly signal?: AbortSignal
}

export interface IterResponsesEventsOptions {
  readonly streamId?: string
  /** The checkpoint's name; default `default`. */
  readonly consumer?: string
  /**
   * Where the consumer's place is kept: `true` (the default) in the checkpoints file (`SLUICE_CHECKPOINTS`,
   * else `~/.config/sluice/checkpoints.json`), a store of your own, or `false` for none.
   */
  readonly checkpoint?: boolean | CheckpointStore
  /** Start after this completion_id, whatever the checkpoint says. */
  readonly startingAfter?: string
  /** Forget the checkpoint and start with the newest page of events. */
  readonly fromLatest?: boolean
  /** Keep waiting for new events (long polls of `waitMs`) instead of ending once caught up. */
  readonly follow?: boolean
  /** Each long poll's wait while following; default 20000. */
  readonly waitMs?: number
  /** Events asked for per call, 1 to 100; default 100. */
  readonly pageSize?: number
  readonly signal?: AbortSignal
}

/**
 * The feed's events in order, from after the consumer's checkpoint, or, without one, from the newest page
 * (its events oldest first). Each event's id is saved as the checkpoint once the caller asks for the next
 * one, so an event handled when the consumer stopped comes again on its next run: at least once, and no
 * gap.
 */
export async function* iterateResponsesEvents(
  list: (options: ResponsesEventsPageOptions) => Promise<CompletionEventList>,
  baseUrl: string,
  options: IterResponsesEventsOptions,
): AsyncGenerator<CompletionEvent, void, undefined> {
  const store = options.checkpoint === false ? undefined : options.checkpoint === undefined || options.checkpoint === true ? fileCheckpoints() : options.checkpoint
  const key = checkpointKey(baseUrl, options.streamId, options.consumer ?? "default")
  if (options.fromLatest === true) await store?.clear(key)
  let cursor = options.startingAfter ?? (options.fromLatest === true ? undefined : await store?.load(key))
  const follow = options.follow === true
  for (;;) {
    const newest = cursor === undefined
    const page = await list({
      ...(options.streamId === undefined ? {} : { streamId: options.streamId }),
      ...(cursor === undefined ? {} : { startingAfter: cursor }),
      limit: options.pageSize ?? 100,
      waitMs: follow ? (options.waitMs ?? 20_000) : 0,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    })
    for (const event of newest ? [...page.data].reverse() : page.data) {
      yield event
      cursor = event.completion_id
      await store?.save(key, event.completion_id)
    }
    if (!follow && (page.data.length === 0 || (!newest && !page.has_more))) return
  }
}
