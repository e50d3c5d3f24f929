import { describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { chatRow } from "../support/client.js"
import { withSluice } from "../support/withSluice.js"

/*
 * POST /v1/batches/{id}/rerun: a new batch of exactly the chosen rows of a final batch, through the
 * public API, the simulator as the upstream. The actors run on a TestClock, so a completion window
 * closes in milliseconds.
 */
const DAY = 86_400_000
const FINAL = ["completed", "failed", "expired", "cancelled"]
const tick = () => new Promise((r) => setTimeout(r, 10))

const eventually = async <T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> => {
  const deadline = Date.now() + 20_000
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`)
    await tick()
  }
}

describe.each(["embedded", "nats"] as const)("rerun on the %s event log", (backend) => {
  const f = withSluice({
    log: backend,
    inProcess: true,
    lifetime: "test",
    // A 429 once per distinct row, whose Retry-After outlasts the window: the row waits for its retry until it expires.
    simulator: { models: ["fast", "parking"], faults: { retryAfterSeconds: 40 * 86_400 } },
    models: (url) => [
      { id: "fast", upstream_url: url, batch_concurrency: 4, timeout_ms: 2 * DAY },
      { id: "parking", upstream_url: url, batch_concurrency: 4, timeout_ms: 2 * DAY },
    ],
  })
  const api = () => f.api()
  const read = async (id: string) => (await api().call("GET", `/v1/batches/${id}`)).body
  const finished = (id: string) => eventually(() => read(id), (b) => FINAL.includes(b.status), `batch ${id} final`)
  const create = async (requests: ReadonlyArray<object>, metadata?: object) => {
    const created = await api().call("POST", "/v1/batches", { requests, ...(metadata === undefined ? {} : { metadata }) })
    expect(created.status, created.text).toBe(200)
    return created.body.id as string
  }
  const rerun = (id: string, body?: unknown) => api().call("POST", `/v1/batches/${id}/rerun`, body)
  const requestOf = async (id: string, n: number) => (await api().call("GET", `/v1/batches/${id}/results/batch_req_${n}`)).body.request
  const ids = async () => ((await api().call("GET", "/v1/batches?limit=100")).body.data as Array<{ id: string }>).map((b) => b.id)

  const start = () => f.start()

  it("reruns an expired batch's expired rows with the same custom_ids, bodies and order, and runs them", async () => {
    await start()
    const onceParked = (id: string) => chatRow(id, `${backend} once ${id} ${simDirective.fail(1, 429)}`, "parking", { max_tokens: 7 })
    const original = await create(
      [chatRow("done-1", "quick one", "fast"), onceParked("late-a"), chatRow("done-2", "quick two", "fast"), onceParked("late-b")],
      { project: "p1" },
    )
    await eventually(
      () => api().allResults(original),
      (rows) => rows.filter((r) => r.status === "completed").length === 2 && rows.filter((r) => r.error?.code === "rate_limited").length === 2,
      "the quick rows done and the others waiting for their retry",
    )
    await f.sluice.adjust(DAY)
    const expired = await finished(original)
    expect(expired.status).toBe("expired")

    const again = await rerun(original)
    expect(again.status, again.text).toBe(200)
    expect(again.body).toMatchObject({ object: "batch", rerun_of: original, metadata: { project: "p1" } })
    expect(again.body.request_counts.total).toBe(2)
    const done = await finished(again.body.id)
    expect(done.status).toBe("completed")
    const rows = await api().allResults(again.body.id)
    expect(rows.map((r) => [r.custom_id, r.status])).toEqual([["late-a", "completed"], ["late-b", "completed"]])
    expect(await requestOf(again.body.id, 1)).toEqual(await requestOf(original, 2))
    expect(await requestOf(again.body.id, 2)).toEqual(await requestOf(original, 4))
    // The original is unchanged, and not a rerun itself.
    expect(await read(original)).toEqual(expired)
    expect(expired.rerun_of).toBeNull()
  })

  it("reruns only the rows with one error code, with new metadata", async () => {
    await start()
    const original = await create([
      chatRow("ok-1", "fine", "fast"),
      chatRow("nf-1", `missing ${simDirective.status(404)}`, "fast"),
      chatRow("bad-1", `invalid ${simDirective.status(400)}`, "fast"),
      chatRow("nf-2", `missing again ${simDirective.status(404)}`, "fast"),
    ])
    expect((await finished(original)).request_counts).toEqual({ total: 4, completed: 1, failed: 3 })
    const again = await rerun(original, { error_codes: ["model_not_found"], metadata: { why: "retry 404s" } })
    expect(again.status, again.text).toBe(200)
    expect(again.body).toMatchObject({ rerun_of: original, metadata: { why: "retry 404s" }, request_counts: { total: 2 } })
    await finished(again.body.id)
    expect((await api().allResults(again.body.id)).map((r) => r.custom_id)).toEqual(["nf-1", "nf-2"])
    const completedOnly = await rerun(original, { statuses: ["completed"] })
    expect((await api().allResults(completedOnly.body.id)).map((r) => r.custom_id)).toEqual(["ok-1"])
  })

  it("refuses a batch that is not final (409), a filter that selects nothing (400), a bad body (400) and another account's batch (404), storing nothing", async () => {
    await start()
    const running = await create([chatRow("p", `parked ${simDirective.status(429)}`, "parking")])
    const done = await create([chatRow("ok", "fine", "fast")])
    await finished(done)
    const before = await ids()

    const notFinal = await rerun(running)
    expect(notFinal.status, notFinal.text).toBe(409)
    expect(notFinal.body.error.message).toContain("only a final batch")
    const nothing = await rerun(done)
    expect(nothing.status).toBe(400)
    expect(nothing.body.error).toMatchObject({ type: "invalid_request_error", param: "statuses" })
    expect(nothing.body.error.message).toBe(`No request of batch '${done}' has status failed or expired or cancelled; there is nothing to rerun`)
    for (const [body, param] of [
      [{ statuses: ["done"] }, "statuses[0]"],
      [{ statuses: [] }, "statuses"],
      [{ error_codes: "timeout" }, "error_codes"],
      [{ colour: "red" }, "colour"],
      [{ statuses: ["completed"], metadata: { k: 1 } }, "metadata.k"],
      ["[1]", "body"],
    ] as const) {
      const refused = await rerun(done, body)
      expect(refused.status, `${JSON.stringify(body)}: ${refused.text}`).toBe(400)
      expect(refused.body.error.param).toBe(param)
    }

    const account = await api().admin("POST", "/admin/v1/accounts", { id: "other-rerun", tier: "internal" })
    expect(account.status, account.text).toBe(200)
    const key = await api().admin("POST", "/admin/v1/accounts/other-rerun/keys", {})
    const stranger = await f.api(key.body.key).call("POST", `/v1/batches/${done}/rerun`, { statuses: ["completed"] })
    expect(stranger.status).toBe(404)
    expect(stranger.body.error.message).toBe(`No batch found with id '${done}'`)
    const wrongKey = await f.api("sk-not-a-key").call("POST", `/v1/batches/${done}/rerun`, { statuses: ["completed"] })
    expect(wrongKey.status).toBe(401)
    expect(await ids()).toEqual(before)
  })
})
