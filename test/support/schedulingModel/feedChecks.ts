import { expect } from "vitest"
import type { client } from "../client.js"
import { answered } from "./responseChecks.js"
import { FINAL_RESPONSE, type World, mayBeAway, queuedAway } from "./world.js"

const FROM_THE_START = `cmpl_${"0".repeat(20)}`
const settledRow = (status: string) => status !== "queued" && status !== "running"
/** The feed's status for a row's final status: an expired row's attempt failed. */
const eventStatusOf = (status: string) => (status === "expired" ? "failed" : status)

/** What one instance showed of an account's batches' rows and its responses, read just before its feeds. */
export interface Views {
  readonly rows: ReadonlyMap<string, ReadonlyArray<any>>
  readonly responses: ReadonlyMap<string, any>
}

/** A whole feed (outside streams, or a stream's), oldest first, read page after page from its start; undefined when refused. */
export const readFeed = async (w: World, reader: ReturnType<typeof client>, via: number, stream: string | null): Promise<Array<any> | undefined> => {
  const events: Array<any> = []
  for (let after = FROM_THE_START; ; ) {
    const page = await reader.call("GET", `/v1/responses/events?limit=100&starting_after=${after}${stream === null ? "" : `&stream_id=${stream}`}`)
    if (page.status !== 200) {
      if (!(queuedAway(page) && mayBeAway(w, via))) expect([401, 429], `instance #${via}: ${page.text}`).toContain(page.status)
      return undefined
    }
    events.push(...page.body.data)
    if (!page.body.has_more) return events
    after = page.body.data.at(-1).completion_id
  }
}

/**
 * A feed as one instance shows it: in the log's order, which is the same through every instance and
 * after every restart (each reading and the longest one before it agree up to the shorter's end), with
 * each settled attempt once. A batch row's event is its account's, outside streams, its status the
 * row's; a response's is a background response's outside streams or an item's in its stream, never a
 * flex request's. Every row and response whose call was answered has its event.
 */
export const checkFeed = (w: World, account: number, stream: string | null, events: ReadonlyArray<any>, views: Views) => {
  const name = stream === null ? `${account}` : `${account}:${stream}`
  for (let i = 1; i < events.length; i++) expect(events[i].completion_id > events[i - 1].completion_id, `feed ${name} out of order at ${i}`).toBe(true)
  const lines = events.map((e) => JSON.stringify([e.completion_id, e.response_id, e.batch_id, e.result_id, e.custom_id, e.status]))
  const before = w.feeds.get(name) ?? []
  const [shorter, longer] = lines.length <= before.length ? [lines, before] : [before, lines]
  expect(longer.slice(0, shorter.length), `feed ${name}: this reading and the longest before disagree`).toEqual(shorter)
  w.feeds.set(name, longer)

  const byRun = new Map<string, any>()
  for (const e of events) {
    const run = e.response_id ?? `${e.batch_id}/${e.result_id}`
    expect(byRun.has(run), `feed ${name} lists ${run} twice`).toBe(false)
    byRun.set(run, e)
    if (e.response_id === null) {
      expect(stream, `a batch row in stream ${stream}'s feed`).toBeNull()
      const batch = w.batches.find((b) => b.id === e.batch_id)
      expect(batch?.account, `feed ${name}: ${JSON.stringify(e)}`).toBe(account)
      const index = Number(String(e.result_id).slice("batch_req_".length)) - 1
      expect(e.custom_id).toBe(`r${index}`)
      const row = views.rows.get(e.batch_id)?.[index]
      if (row !== undefined && settledRow(row.status)) expect(e.status, `${e.batch_id} row ${index}: ${JSON.stringify(row)}`).toBe(eventStatusOf(row.status))
    } else {
      expect(e.batch_id).toBeNull()
      const response = w.responses.find((r) => r.id === e.response_id)
      expect(response, `feed ${name} lists a response the test never queued (a flex request's?): ${JSON.stringify(e)}`).toBeDefined()
      expect(response!.flex, `feed ${name} lists flex Response ${e.response_id}`).toBe(false)
      expect([response!.account, response!.stream]).toEqual([account, stream])
      expect(e.custom_id).toBe(stream === null ? null : response!.sent.tag)
      const shown = views.responses.get(e.response_id)
      // A response cancelled while its call ran reads cancelled, and its event says how the call ended.
      if (shown !== undefined && FINAL_RESPONSE.has(shown.status)) {
        const expected = answered(shown) ? ["completed"] : shown.status === "cancelled" ? ["failed", "cancelled"] : [shown.status]
        expect(expected, `${e.response_id}: ${shown.status}, its event ${e.status}`).toContain(e.status)
      }
    }
  }

  if (stream === null) {
    for (const batch of w.batches) {
      if (batch.account !== account) continue
      for (const [i, row] of (views.rows.get(batch.id) ?? []).entries()) {
        // A row the upstream answered, or refused for good, was settled by its attempt.
        if (row.status === "completed" || (row.status === "failed" && row.error?.status === 400)) {
          expect(byRun.get(`${batch.id}/batch_req_${i + 1}`)?.status, `${batch.id} row ${i} (${row.status}) is not in the feed`).toBe(row.status)
        }
      }
    }
  }
  for (const [id, shown] of views.responses) {
    const response = w.responses.find((r) => r.id === id)!
    if (response.account !== account || response.stream !== stream || !answered(shown)) continue
    expect(byRun.get(id)?.status, `${id} (${shown.status}) is not in feed ${name}`).toBe("completed")
  }
}
