import { expect } from "vitest"
import type { Answer, client } from "../client.js"
import { type Batch, FINAL_BATCH, type World, answerTo, mayBeAway, queuedAway } from "./world.js"

/**
 * A batch and its rows as of one moment: rows keep finishing while the check reads, so the batch is
 * read again after its rows, and the reads are retried until nothing moved in between.
 */
const snapshot = async (reader: ReturnType<typeof client>, id: string): Promise<{ got: Answer; rows: Array<any> }> => {
  const progress = (body: any) => JSON.stringify([body?.status, body?.request_counts])
  for (let attempt = 0; ; attempt++) {
    const got = await reader.call("GET", `/v1/batches/${id}`)
    if (got.status !== 200) return { got, rows: [] }
    const rows: Array<any> = []
    for (let after = ""; ; ) {
      const page = await reader.call("GET", `/v1/batches/${id}/results?limit=1000${after}`)
      // A read refused part way (the log went away meanwhile) is the answer.
      if (page.status !== 200) return { got: page, rows: [] }
      rows.push(...page.body.data)
      if (!page.body.has_more) break
      after = `&after=${page.body.last_id}`
    }
    const again = await reader.call("GET", `/v1/batches/${id}`)
    if (again.status !== 200) return { got: again, rows: [] }
    if (progress(again.body) === progress(got.body) || attempt === 100) return { got, rows }
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** Takes on the account's batches whose create only a cut instance answered, found by their metadata's tag; any other is none of the test's. */
export const adoptBatches = async (w: World, account: number, reader: ReturnType<typeof client>) => {
  if (![...w.unanswered.values()].some((u) => u._tag === "batch" && u.account === account)) return
  const listed = await reader.call("GET", "/v1/batches?limit=100")
  if (listed.status !== 200) return
  for (const shown of listed.body.data) {
    if (w.batches.some((b) => b.id === shown.id)) continue
    const unanswered = w.unanswered.get(shown.metadata?.tag)
    expect(unanswered?._tag, `a batch the test never created: ${JSON.stringify(shown)}`).toBe("batch")
    if (unanswered?._tag !== "batch") continue
    w.unanswered.delete(shown.metadata.tag)
    w.batches.push({ id: shown.id, account, requests: unanswered.requests, priority: unanswered.priority, startBy: undefined })
    // Created while its instance was cut off, at a moment the test does not know: not judged as waiting.
    w.mayHaveEnded.add(shown.id)
  }
}

/**
 * A batch as instance `via` shows it: counts that add up, final only once nothing runs or waits, and
 * once final the same ever after, not a count, a result or cost_usd, until it is deleted. Each result
 * is its own request's answer, from a request the upstream saw. Answers the rows when it could read them.
 */
export const checkBatchRead = async (w: World, batch: Batch, reader: ReturnType<typeof client>, via: number): Promise<Array<any> | undefined> => {
  const { got, rows } = await snapshot(reader, batch.id)
  if (got.status !== 200) {
    if (!(queuedAway(got) && mayBeAway(w, via))) expect([401, 429], `instance #${via}: ${got.text}`).toContain(got.status)
    return undefined
  }
  const counts = got.body.request_counts
  expect(got.body.priority, `${batch.id} through #${via}`).toBe(batch.priority)
  expect(rows.map((r) => r.id)).toEqual(rows.map((_, i) => `batch_req_${i + 1}`))
  expect(rows.map((r) => r.custom_id)).toEqual(batch.requests.map((_, i) => `r${i}`))
  const by = (status: string) => rows.filter((r) => r.status === status).length
  expect(counts.total).toBe(batch.requests.length)
  expect(counts.completed).toBe(by("completed"))
  expect(counts.failed).toBe(by("failed") + by("expired"))
  expect(by("queued") + by("running") + by("completed") + by("failed") + by("expired") + by("cancelled")).toBe(batch.requests.length)
  for (const [i, row] of rows.entries()) {
    const sent = batch.requests[i]!
    const calls = w.upstreams[batch.account]!.calls(sent.text)
    if (row.status === "completed") {
      expect(row.response.body.choices[0].message.content, `${batch.id} row ${i}`).toBe(answerTo(sent))
      expect(calls, `${batch.id} row ${i} completed, but the upstream never saw '${sent.text}'`).toBeGreaterThanOrEqual(1)
    }
    if (row.error?.status !== undefined) expect(calls, `${batch.id} row ${i} has the upstream's ${row.error.status}, but the upstream never saw it`).toBeGreaterThanOrEqual(1)
  }
  if (FINAL_BATCH.has(got.body.status)) {
    expect(`batch_${got.body.status}`).toBe(batch.finalStatus ?? `batch_${got.body.status}`)
    expect(by("running") + by("queued")).toBe(0)
    const seen = { batch: got.body, rows }
    if (batch.final === undefined) batch.final = seen
    else expect(seen).toEqual(batch.final)
  } else {
    expect(batch.final).toBeUndefined()
  }
  return rows
}
