import { expect } from "vitest"
import type { client } from "../client.js"
import { FINAL_RESPONSE, type Stream, type World, mayBeAway, queuedAway } from "./world.js"

/**
 * A stream as instance `via` shows it: closed once a close was stored, and never open again; once
 * every item is final, its counters are the counts of its items' statuses as they read, and its latest
 * completion is its feed's last.
 */
export const checkStream = async (w: World, stream: Stream, reader: ReturnType<typeof client>, via: number, responses: ReadonlyMap<string, any>, feed: ReadonlyArray<any> | undefined) => {
  const got = await reader.call("GET", `/v1/streams/${stream.id}`)
  if (got.status !== 200) {
    // Streams, reads included, are for accounts with batch access (403), unlike batches' and responses' reads.
    if (!(queuedAway(got) && mayBeAway(w, via))) expect([401, 403, 429], `instance #${via}: ${got.text}`).toContain(got.status)
    return
  }
  const detail = got.body
  expect(detail.priority, stream.id).toBe(stream.priority)
  if (stream.archived === true) expect(detail.status, stream.id).toBe("archived")
  else if (stream.closed === true) expect(["cancelled", "archived"], stream.id).toContain(detail.status)
  else if (stream.closed === false) expect(detail.status, stream.id).toBe("open")
  if (detail.status !== "open") stream.closed = true
  if (detail.status === "archived") stream.archived = true

  const items = [...responses.values()].filter((r) => r.metadata?.stream_id === stream.id)
  if (!items.every((item) => FINAL_RESPONSE.has(item.status))) return
  const count = (status: string) => items.filter((item) => item.status === status).length
  const counters = (d: any) => ({
    total_items: d.total_items,
    pending_items: d.pending_items,
    running_items: d.running_items,
    completed_items: d.completed_items,
    failed_items: d.failed_items,
    cancelled_items: d.cancelled_items,
  })
  expect(counters(detail), `${stream.id}: ${JSON.stringify(items.map((i) => [i.id, i.status]))}`).toEqual({
    total_items: items.length,
    pending_items: 0,
    running_items: 0,
    completed_items: count("completed") + count("incomplete"),
    failed_items: count("failed"),
    cancelled_items: count("cancelled"),
  })
  expect(detail.completion_ratio).toBe(items.length === 0 ? 0 : 1)
  if (feed !== undefined) expect(detail.latest_completion_id, stream.id).toBe(feed.at(-1)?.completion_id ?? null)
}
