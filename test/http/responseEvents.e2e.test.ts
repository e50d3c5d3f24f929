import { rmSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { formatCompletionId } from "../../src/domain/completion/feedPosition.js"
import { simDirective } from "../../src/sim/Directives.js"
import { type Answer, chatRow, client } from "../support/client.js"
import { storedEvents, terminalRowTypes } from "../support/storedEvents.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"

/*
 * GET /v1/responses/events over batch rows, through the public API of a real process on each log: the
 * feed holds each settled row at its place in the log, pages both ways, waits for a completion without
 * polling, keeps each account to its own rows, lets a deleted batch's rows go, and reads the same after
 * the read model is rebuilt from the log.
 */

const MODEL = "glm-5.3-flash"
const FIELDS = [
  "completion_id",
  "response_id",
  "custom_id",
  "status",
  "result",
  "error",
  "prompt_tokens",
  "completion_tokens",
  "total_tokens",
  "completed_at",
  "batch_id",
  "result_id",
]

type Api = ReturnType<typeof client>

describe.each([
  { name: "the embedded log", log: "embedded" },
  { name: "NATS JetStream", log: "nats" },
] as const)("the completion-events feed, on $name", ({ log }) => {
  const f = withSluice({
    log,
    simulator: { models: [MODEL] },
    models: (url) => [{ id: MODEL, upstream_url: url, batch_concurrency: 4 }],
    // The actors' clock moves only when told: a wait that ends had a completion end it, or an adjust.
    sluice: { testClock: {} },
  })

  /** A fresh account with a key of its own: each test's feed holds only its own rows. */
  const newAccount = async (): Promise<Api> => {
    const id = `acct-${Math.random().toString(36).slice(2, 10)}`
    expect((await f.api().admin("POST", "/admin/v1/accounts", { id, tier: "internal" })).status).toBe(200)
    const key = await f.api().admin("POST", `/admin/v1/accounts/${id}/keys`, {})
    expect(key.status).toBe(200)
    return f.api(key.body.key)
  }

  const finishedBatch = async (api: Api, requests: ReadonlyArray<unknown>) => {
    const created = await api.call("POST", "/v1/batches", { requests })
    expect(created.status, created.text).toBe(200)
    return api.waitFinal(created.body.id)
  }

  const feed = (api: Api, query = "") => api.call("GET", `/v1/responses/events${query === "" ? "" : `?${query}`}`)

  /** The whole feed, oldest first, read as one newest-first page. */
  const everything = async (api: Api) => {
    const page = await feed(api, "limit=100")
    expect(page.status, page.text).toBe(200)
    expect(page.body.has_more).toBe(false)
    return [...(page.body.data as Array<any>)].reverse()
  }

  const waitingCalls = async () => {
    const text = (await f.api().call("GET", "/metrics", undefined, {})).text
    return Number(/^sluice_completion_feed_waiting (\d+)$/m.exec(text)?.[1] ?? Number.NaN)
  }

  const rows = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => chatRow(`${prefix}-${i}`, `${prefix} prompt ${i}`))

  it("holds each settled row once, at its place in the log, with its custom_id, result or error, tokens and ISO completion time", async () => {
    const api = await newAccount()
    const batch = await finishedBatch(api, [
      chatRow("ok-1", "first"),
      chatRow("bad", `refused ${simDirective.status(400)}`),
      chatRow("ok-2", "second"),
    ])
    const events = await everything(api)
    expect(events).toHaveLength(3)
    for (const event of events) expect(Object.keys(event)).toEqual(FIELDS)

    // Each event's id is its row event's place in the log: the message's seq, and its place in a lane window.
    const stored = await storedEvents({ dataDir: f.sluice.dataDir, natsUrl: f.natsUrl }, batch.id)
    const placed = stored.map((e, i) => ({ ...e, idx: stored.slice(0, i).filter((o) => o.seq === e.seq).length }))
    // A row settles once: a terminal event the log may hold again for it (a re-sent append) changes nothing.
    const settling = placed.filter((e, i) => terminalRowTypes.has(e.type) && !placed.slice(0, i).some((o) => terminalRowTypes.has(o.type) && o.row === e.row))
    expect(events.map((e) => e.completion_id)).toEqual(settling.map((e) => formatCompletionId(e)))

    const results = await api.allResults(batch.id)
    for (const event of events) {
      const line = results.find((r) => r.id === event.result_id)
      expect(line, event.result_id).toBeDefined()
      expect(event).toMatchObject({ response_id: null, custom_id: line.custom_id, status: line.status, batch_id: batch.id })
      expect(new Date(event.completed_at).toISOString()).toBe(event.completed_at)
      expect(Date.parse(event.completed_at)).toBeGreaterThanOrEqual(batch.created_at * 1000)
      expect(Date.parse(event.completed_at)).toBeLessThan((batch.completed_at + 1) * 1000)
      if (event.status === "completed") {
        expect(event.result).toEqual(line.response.body)
        expect(event.error).toBeNull()
        const usage = line.response.body.usage
        expect([event.prompt_tokens, event.completion_tokens, event.total_tokens]).toEqual([
          usage.prompt_tokens,
          usage.completion_tokens,
          usage.total_tokens,
        ])
        expect(event.total_tokens).toBeGreaterThan(0)
      } else {
        expect(event).toMatchObject({ custom_id: "bad", status: "failed", result: null, prompt_tokens: null, total_tokens: null })
        expect(event.error).toEqual(line.error)
      }
    }
    expect(events.map((e) => e.status).sort()).toEqual(["completed", "completed", "failed"])
  })

  it("pages forward after a cursor oldest first and backward before one newest first, together covering every event exactly once; the cursorless page is the newest", async () => {
    const api = await newAccount()
    await finishedBatch(api, rows("a", 7))
    await finishedBatch(api, rows("b", 6))
    const all = await everything(api)
    const ids = all.map((e) => e.completion_id)
    expect(ids).toHaveLength(13)
    expect([...ids].sort()).toEqual(ids)

    const newest = await feed(api, "limit=4")
    expect(newest.body).toMatchObject({ object: "list", has_more: true })
    expect(newest.body.data.map((e: any) => e.completion_id)).toEqual(ids.slice(-4).reverse())
    expect((await feed(api)).body.data).toHaveLength(13)

    const forward: Array<string> = [ids[0]!]
    for (let cursor = ids[0]!, more = true; more; ) {
      const page = await feed(api, `starting_after=${cursor}&limit=4`)
      expect(page.status, page.text).toBe(200)
      const got = page.body.data.map((e: any) => e.completion_id) as Array<string>
      forward.push(...got)
      more = page.body.has_more
      if (more) expect(got).toHaveLength(4)
      cursor = got[got.length - 1] ?? cursor
    }
    expect(forward).toEqual(ids)

    const backward: Array<string> = newest.body.data.map((e: any) => e.completion_id)
    for (let cursor = backward[backward.length - 1]!, more = newest.body.has_more as boolean; more; ) {
      const page = await feed(api, `ending_before=${cursor}&limit=4`)
      const got = page.body.data.map((e: any) => e.completion_id) as Array<string>
      backward.push(...got)
      more = page.body.has_more
      cursor = got[got.length - 1] ?? cursor
    }
    expect(backward).toEqual([...ids].reverse())

    const past = await feed(api, `starting_after=${ids[ids.length - 1]}`)
    expect(past.body).toEqual({ object: "list", data: [], has_more: false })
    const before = await feed(api, `ending_before=${ids[0]}`)
    expect(before.body).toEqual({ object: "list", data: [], has_more: false })
  })

  it("a call with wait_ms and nothing after its cursor waits, and answers with the completion that ends the wait", async () => {
    const api = await newAccount()
    // The actors' clock does not move here: only the row's completion can end these waits.
    const first = feed(api, "wait_ms=25000")
    await waitFor("the call to wait", async () => (await waitingCalls()) === 1)
    await finishedBatch(api, [chatRow("woke-1", "wake the waiting call")])
    const woke = await first
    expect(woke.status, woke.text).toBe(200)
    expect(woke.body.data.map((e: any) => e.custom_id)).toEqual(["woke-1"])
    expect(woke.body.has_more).toBe(false)

    const cursor = woke.body.data[0].completion_id
    let answered: Answer | undefined
    const second = feed(api, `starting_after=${cursor}&wait_ms=25000`).then((a) => (answered = a))
    await waitFor("the call to wait", async () => (await waitingCalls()) === 1)
    // Another account's completion, readable in its own feed, does not answer it.
    const stranger = await newAccount()
    await finishedBatch(stranger, [chatRow("not-yours", "another account's row")])
    expect((await everything(stranger)).map((e) => e.custom_id)).toEqual(["not-yours"])
    expect(answered).toBeUndefined()
    await finishedBatch(api, [chatRow("woke-2", "wake it again")])
    const again = await second
    expect(again.body.data.map((e: any) => e.custom_id)).toEqual(["woke-2"])
    expect(await waitingCalls()).toBe(0)
  })

  it("wait_ms above 25000 waits 25000 on the clock, then answers an empty page", async () => {
    const api = await newAccount()
    let answered: Answer | undefined
    const call = feed(api, "wait_ms=600000").then((a) => (answered = a))
    await waitFor("the call to wait", async () => (await waitingCalls()) === 1)
    await f.sluice.adjust(24_999)
    // A round trip after the adjust: a wait that ended there would have answered by now.
    expect(await waitingCalls()).toBe(1)
    expect(answered).toBeUndefined()
    await f.sluice.adjust(1)
    const empty = await call
    expect(empty.status).toBe(200)
    expect(empty.body).toEqual({ object: "list", data: [], has_more: false })
  })

  it("shows an account only its own rows, and a deleted batch's rows leave it; a cursor of theirs still pages", async () => {
    const one = await newAccount()
    const two = await newAccount()
    const kept = await finishedBatch(one, rows("kept", 2))
    const gone = await finishedBatch(one, rows("gone", 3))
    const theirs = await finishedBatch(two, rows("theirs", 2))
    const ofOne = await everything(one)
    expect(ofOne.map((e) => e.batch_id)).toEqual([kept.id, kept.id, gone.id, gone.id, gone.id])
    expect((await everything(two)).map((e) => e.batch_id)).toEqual([theirs.id, theirs.id])

    expect((await one.call("DELETE", `/v1/batches/${gone.id}`)).status).toBe(200)
    expect((await everything(one)).map((e) => e.completion_id)).toEqual(ofOne.slice(0, 2).map((e) => e.completion_id))
    const afterGone = await feed(one, `ending_before=${ofOne[4].completion_id}`)
    expect(afterGone.body.data.map((e: any) => e.completion_id)).toEqual(ofOne.slice(0, 2).reverse().map((e) => e.completion_id))
    expect((await feed(one, `starting_after=${ofOne[2].completion_id}`)).body.data).toEqual([])
  })

  it("answers a bad parameter 400 with a one-line message naming it, and stores nothing", async () => {
    const api = await newAccount()
    const cursor = formatCompletionId({ seq: 42, idx: 0 })
    const bad: Array<[string, string]> = [
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["limit=ten", "limit"],
      ["limit=1&limit=2", "limit"],
      [`starting_after=${cursor}&ending_before=${cursor}`, "ending_before"],
      ["starting_after=batch_req_1", "starting_after"],
      ["ending_before=019d58a7-2ece-7742-bc3e-69ba44168279", "ending_before"],
      ["wait_ms=-1", "wait_ms"],
      ["wait_ms=soon", "wait_ms"],
      ["stream_id=", "stream_id"],
    ]
    for (const [query, param] of bad) {
      const answer = await feed(api, query)
      expect(answer.status, query).toBe(400)
      expect(Object.keys(answer.body.error)).toEqual(["message", "type", "param", "code"])
      expect(answer.body.error, query).toMatchObject({ type: "invalid_request_error", param })
      expect(answer.body.error.message, query).toContain(`'${param}'`)
      expect(answer.body.error.message, query).not.toContain("\n")
    }
    expect((await feed(api, "limit=1&limit=2")).body.error.message).toBe("'limit' may be given only once")
    expect((await feed(api, "wait_ms=-1")).body.error.message).toBe(
      "'wait_ms' must be a whole number of milliseconds, 0 or more (above 25000 it waits 25000), got '-1'",
    )
    expect((await feed(api, "limit=0")).body.error.message).toBe("'limit' must be a whole number from 1 to 100, got '0'")
    expect(await everything(api)).toEqual([])
    expect((await f.api().call("GET", "/v1/responses/events", undefined, {})).status).toBe(401)
  })

  it("is declared in the OpenAPI document, with its parameters, its list schema and the API key it needs", async () => {
    const spec = (await f.api().call("GET", "/openapi.json", undefined, {})).body
    const operation = spec.paths["/v1/responses/events"].get
    expect(operation.security).toEqual([{ apiKey: [] }])
    expect(operation.parameters.map((p: any) => p.name).sort()).toEqual(["ending_before", "limit", "starting_after", "stream_id", "wait_ms"])
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(["200", "400", "401"]))
    expect(spec.components.schemas.CompletionEvent.required).toEqual(expect.arrayContaining(FIELDS))
  })

  it("reads the same, cursors included, after a restart whose read model is rebuilt from the log", async () => {
    const api = await newAccount()
    await finishedBatch(api, [...rows("before", 3), chatRow("bad", `refused ${simDirective.status(400)}`)])
    const seen = await everything(api)
    expect(seen).toHaveLength(4)
    const { dataDir } = f.sluice
    const at = await f.sluice.now()
    await f.sluice.stop()
    for (const suffix of ["", "-wal", "-shm"]) rmSync(join(dataDir, `read.${log}.sqlite${suffix}`), { force: true })
    await f.start({ dataDir, testClock: { startMs: at } })
    expect(await everything(api)).toEqual(seen)
    const page = await feed(api, `starting_after=${seen[1].completion_id}&limit=1`)
    expect(page.body).toEqual({ object: "list", data: [seen[2]], has_more: true })
  })
})
