import { beforeAll, describe, expect, it } from "vitest"
import { chatRow } from "../support/client.js"
import { withSluice } from "../support/withSluice.js"

/*
 * `priority` on the creates (batches inline and from a file, estimates, reruns, queued responses and
 * streams) and an account's `max_priority`, through the public and admin APIs over loopback, on both
 * logs: what each answers and shows, what it refuses (400 for a value that is no priority, 403 above the
 * account's allowance) and that a refused create stores nothing. How the scheduler orders the work is
 * tested with the scheduler.
 */

const MODEL = "glm-5.3-flash"
const FINAL = ["completed", "failed", "expired", "cancelled"]
const jsonl = (lines: ReadonlyArray<unknown>) => `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`
const rows = (prefix: string, n = 2) => Array.from({ length: n }, (_, i) => chatRow(`${prefix}-${i}`, `hello ${prefix} ${i}`, MODEL))
const notAPriority = (field: string, sent: unknown) => `'${field}' must be one of high, standard, background, got ${JSON.stringify(sent)}`

describe.each(["embedded", "nats"] as const)("priorities on creates, on the %s log", (log) => {
  const f = withSluice({
    log,
    inProcess: true,
    simulator: { models: [MODEL], latencyMs: 2 },
    models: (url) => [{ id: MODEL, upstream_url: url, batch_concurrency: 4 }],
  })
  /** An internal account allowed `high`, made with POST /admin/v1/accounts. */
  let key: string

  const account = async (id: string, settings: object = {}) => {
    const created = await f.api().admin("POST", "/admin/v1/accounts", { id, tier: "internal", ...settings })
    expect(created.status, created.text).toBe(200)
    const made = await f.api().admin("POST", `/admin/v1/accounts/${id}/keys`, {})
    return { object: created.body, key: made.body.key as string }
  }
  const call = (k: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    f.api(k).call(method, path, body, { authorization: `Bearer ${k}`, ...headers })
  const listed = async (k: string, path: string) => {
    const page = await call(k, "GET", path)
    expect(page.status, page.text).toBe(200)
    return (page.body.data ?? page.body.items) as Array<{ id: string; priority?: string }>
  }
  const upload = async (k: string, lines: ReadonlyArray<unknown>) => {
    const form = new FormData()
    form.append("purpose", "batch")
    form.append("file", new Blob([jsonl(lines)]), "rows.jsonl")
    const response = await fetch(`${f.sluice.url}/v1/files`, { method: "POST", headers: { authorization: `Bearer ${k}` }, body: form })
    expect(response.status).toBe(200)
    return ((await response.json()) as { id: string }).id
  }
  const final = async (k: string, id: string) => {
    for (let i = 0; i < 2_000; i++) {
      const batch = await call(k, "GET", `/v1/batches/${id}`)
      if (FINAL.includes(batch.body.status)) return batch.body
      await new Promise((r) => setTimeout(r, 10))
    }
    throw new Error(`batch ${id} did not finish`)
  }
  /** The batch_created event as the events endpoint shows it: a final batch's stream ends after its history. */
  const createdEvent = async (k: string, id: string) => {
    const text = await (await fetch(`${f.sluice.url}/v1/batches/${id}/events`, { headers: { authorization: `Bearer ${k}` } })).text()
    const block = text.split("\n\n").find((b) => b.includes("event: batch_created"))!
    return JSON.parse(block.split("\n").find((l) => l.startsWith("data: "))!.slice("data: ".length))
  }
  const refusedAbove = (answer: { status: number; body: any; text: string }, asked: string, allowed: string) => {
    expect(answer.status, answer.text).toBe(403)
    expect(answer.body.error).toEqual({
      type: "permission_error",
      code: "forbidden",
      param: "priority",
      message: `'priority' '${asked}' is above what this account may use: its max_priority is '${allowed}' (an admin can raise it)`,
    })
  }
  const refusedBad = (answer: { status: number; body: any; text: string }, sent: unknown) => {
    expect(answer.status, answer.text).toBe(400)
    expect(answer.body.error).toMatchObject({ type: "invalid_request_error", param: "priority", message: notAPriority("priority", sent) })
  }

  beforeAll(async () => {
    const made = await account(`prio-${log}`, { max_priority: "high" })
    expect(made.object).toMatchObject({ id: `prio-${log}`, tier: "internal", status: "active", max_priority: "high" })
    key = made.key
  })

  it("an account may use standard and background until an admin raises its max_priority: above it, every create answers 403 naming priority and stores nothing", async () => {
    const limited = await account(`limited-${log}`)
    expect(limited.object.max_priority).toBe("standard")
    const k = limited.key
    const fileId = await upload(k, rows("file"))

    refusedAbove(await call(k, "POST", "/v1/batches", { requests: rows("a"), priority: "high" }), "high", "standard")
    refusedAbove(await call(k, "POST", "/v1/batches", { input_file_id: fileId, endpoint: "/v1/chat/completions", priority: "high" }), "high", "standard")
    refusedAbove(await call(k, "POST", "/v1/batches", { requests: rows("a"), priority: "high" }, { "idempotency-key": "above-1" }), "high", "standard")
    refusedAbove(await call(k, "POST", "/v1/responses", { model: MODEL, input: "hi", background: true, priority: "high" }), "high", "standard")
    refusedAbove(await call(k, "POST", "/v1/streams", { name: "urgent", priority: "high" }), "high", "standard")
    const stream = await call(k, "POST", "/v1/streams", { name: "plain" })
    expect(stream.status, stream.text).toBe(201)
    refusedAbove(
      await call(k, "POST", "/v1/responses", { model: MODEL, input: "hi", priority: "high", metadata: { stream_id: stream.body.id } }),
      "high",
      "standard",
    )
    expect(await listed(k, "/v1/batches")).toEqual([])
    expect(await listed(k, "/v1/responses")).toEqual([])
    expect((await listed(k, "/v1/streams")).map((s) => s.id)).toEqual([stream.body.id])
    // The key was not kept by the refused create: the same key with an allowed body creates the batch.
    const keyed = await call(k, "POST", "/v1/batches", { requests: rows("a"), priority: "standard" }, { "idempotency-key": "above-1" })
    expect(keyed.status, keyed.text).toBe(200)

    // An estimate says so instead of refusing.
    const estimate = await call(k, "POST", "/v1/batches/estimate", { requests: rows("e"), priority: "high" })
    expect(estimate.status, estimate.text).toBe(200)
    expect(estimate.body.fits).toEqual({ unfinished_batches: true, daily_quota: true, priority: false })
    expect((await call(k, "POST", "/v1/batches/estimate", { requests: rows("e"), priority: "background" })).body.fits.priority).toBe(true)

    const background = await call(k, "POST", "/v1/batches", { requests: rows("b"), priority: "background" })
    expect(background.status, background.text).toBe(200)
    expect(background.body.priority).toBe("background")

    const raised = await f.api().admin("PATCH", `/admin/v1/accounts/limited-${log}`, { max_priority: "high" })
    expect(raised.status, raised.text).toBe(200)
    expect(raised.body).toEqual({ ...limited.object, max_priority: "high" })
    const high = await call(k, "POST", "/v1/batches", { requests: rows("h"), priority: "high" })
    expect(high.status, high.text).toBe(200)
    expect(high.body.priority).toBe("high")
    expect((await call(k, "POST", "/v1/batches/estimate", { requests: rows("e"), priority: "high" })).body.fits.priority).toBe(true)

    // Lowered again, the next create above it is refused.
    const lowered = await f.api().admin("PATCH", `/admin/v1/accounts/limited-${log}`, { max_priority: "background" })
    expect(lowered.body.max_priority).toBe("background")
    refusedAbove(await call(k, "POST", "/v1/batches", { requests: rows("s") }), "standard", "background")
    expect((await call(k, "POST", "/v1/batches", { requests: rows("bg"), priority: "background" })).status).toBe(200)
  })

  it("a max_priority that is no priority answers 400 naming it in one line, on create and patch, and changes nothing", async () => {
    const id = `bad-max-${log}`
    for (const sent of ["urgent", 3, null, "HIGH"]) {
      const created = await f.api().admin("POST", "/admin/v1/accounts", { id, max_priority: sent })
      expect(created.status, created.text).toBe(400)
      expect(created.body.error).toMatchObject({
        type: "invalid_request_error",
        param: "max_priority",
        message: `Invalid request body for POST /admin/v1/accounts: ${notAPriority("max_priority", sent)}`,
      })
    }
    const made = await account(id)
    const patched = await f.api().admin("PATCH", `/admin/v1/accounts/${id}`, { max_priority: "urgent", concurrency: 3 })
    expect(patched.status).toBe(400)
    expect(patched.body.error.message).toBe(`Invalid request body for PATCH /admin/v1/accounts/{id}: ${notAPriority("max_priority", "urgent")}`)
    expect(patched.body.error.message).not.toContain("\n")
    const unchanged = await f.api().admin("PATCH", `/admin/v1/accounts/${id}`, {})
    expect(unchanged.body).toEqual(made.object)
  })

  it("a batch created at each priority answers it, and GET and the list show it; without one it is standard, and only another than standard is stored on batch_created", async () => {
    const ids: Record<string, string> = {}
    for (const priority of ["high", "standard", "background", undefined, null]) {
      const created = await call(key, "POST", "/v1/batches", { requests: rows(`each-${priority}`), ...(priority === undefined ? {} : { priority }) })
      expect(created.status, created.text).toBe(200)
      const expected = priority ?? "standard"
      expect(created.body.priority).toBe(expected)
      expect((await call(key, "GET", `/v1/batches/${created.body.id}`)).body.priority).toBe(expected)
      ids[String(priority)] = created.body.id
    }
    const shown = new Map((await listed(key, "/v1/batches?limit=100")).map((b) => [b.id, b.priority]))
    expect([ids["high"], ids["standard"], ids["background"], ids["undefined"], ids["null"]].map((id) => shown.get(id!))).toEqual([
      "high",
      "standard",
      "background",
      "standard",
      "standard",
    ])
    expect((await final(key, ids["high"]!)).priority).toBe("high")
    expect((await createdEvent(key, ids["high"]!)).priority).toBe("high")
    await final(key, ids["standard"]!)
    expect("priority" in (await createdEvent(key, ids["standard"]!))).toBe(false)
  })

  it("a priority that is no priority answers 400 naming it and stores nothing: inline, from a file, estimated, rerun", async () => {
    const before = (await listed(key, "/v1/batches?limit=100")).length
    const fileId = await upload(key, rows("bad-file"))
    for (const sent of ["urgent", "HIGH", "", 1, true, ["high"]]) {
      refusedBad(await call(key, "POST", "/v1/batches", { requests: rows("bad"), priority: sent }), sent)
      refusedBad(await call(key, "POST", "/v1/batches", { input_file_id: fileId, endpoint: "/v1/chat/completions", priority: sent }), sent)
      refusedBad(await call(key, "POST", "/v1/batches/estimate", { requests: rows("bad"), priority: sent }), sent)
    }
    const done = await call(key, "POST", "/v1/batches", { requests: rows("to-rerun") })
    await final(key, done.body.id)
    refusedBad(await call(key, "POST", `/v1/batches/${done.body.id}/rerun`, { statuses: ["completed"], priority: "urgent" }), "urgent")
    expect((await listed(key, "/v1/batches?limit=100")).length).toBe(before + 1)
  })

  it("a batch from an uploaded file takes a priority, and an estimate of one accepts it", async () => {
    const fileId = await upload(key, rows("from-file", 3))
    const body = { input_file_id: fileId, endpoint: "/v1/chat/completions", completion_window: "24h", priority: "background" }
    const estimate = await call(key, "POST", "/v1/batches/estimate", body)
    expect(estimate.status, estimate.text).toBe(200)
    expect(estimate.body).toMatchObject({ request_counts: { total: 3 }, fits: { priority: true } })
    const created = await call(key, "POST", "/v1/batches", body)
    expect(created.status, created.text).toBe(200)
    expect(created.body).toMatchObject({ input_file_id: fileId, priority: "background", request_counts: { total: 3 } })
    const done = await final(key, created.body.id)
    expect(done).toMatchObject({ status: "completed", priority: "background" })
  })

  it("a rerun keeps the original's priority, unless it names another", async () => {
    const original = await call(key, "POST", "/v1/batches", { requests: rows("orig"), priority: "high" })
    await final(key, original.body.id)
    const kept = await call(key, "POST", `/v1/batches/${original.body.id}/rerun`, { statuses: ["completed"] })
    expect(kept.status, kept.text).toBe(200)
    expect(kept.body).toMatchObject({ rerun_of: original.body.id, priority: "high" })
    const named = await call(key, "POST", `/v1/batches/${original.body.id}/rerun`, { statuses: ["completed"], priority: "background" })
    expect(named.body).toMatchObject({ rerun_of: original.body.id, priority: "background" })
    expect((await call(key, "GET", `/v1/batches/${kept.body.id}`)).body.priority).toBe("high")
  })

  it("Idempotency-Key: the same body is answered the same batch; another priority under the same key is refused 422 and stores nothing", async () => {
    const body = { requests: rows("keyed"), priority: "high" }
    const first = await call(key, "POST", "/v1/batches", body, { "idempotency-key": `prio-key-${log}` })
    expect(first.status, first.text).toBe(200)
    expect(first.body.priority).toBe("high")
    const again = await call(key, "POST", "/v1/batches", body, { "idempotency-key": `prio-key-${log}` })
    expect(again.status).toBe(200)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.id).toBe(first.body.id)
    const before = (await listed(key, "/v1/batches?limit=100")).length
    for (const other of [{ ...body, priority: "background" }, { requests: body.requests }]) {
      const differs = await call(key, "POST", "/v1/batches", other, { "idempotency-key": `prio-key-${log}` })
      expect(differs.status, differs.text).toBe(422)
      expect(differs.body.error).toMatchObject({ code: "idempotency_key_reused", param: "Idempotency-Key" })
    }
    expect((await listed(key, "/v1/batches?limit=100")).length).toBe(before)
  })

  it("queued responses show their priority; a stream's items take the stream's unless they name their own; flex and interactive requests refuse any but standard", async () => {
    const respond = (body: object) => call(key, "POST", "/v1/responses", { model: MODEL, input: "hello", ...body })

    const high = await respond({ background: true, priority: "high" })
    expect(high.status, high.text).toBe(200)
    expect(high.body).toMatchObject({ status: "in_progress", background: true, priority: "high" })
    expect((await call(key, "GET", `/v1/responses/${high.body.id}`)).body.priority).toBe("high")
    expect((await respond({ background: true })).body.priority).toBe("standard")
    refusedBad(await respond({ background: true, priority: "soon" }), "soon")

    const stream = await call(key, "POST", "/v1/streams", { name: "bulk", window: "1h", priority: "background" })
    expect(stream.status, stream.text).toBe(201)
    expect(stream.body).toMatchObject({ object: "stream", window: "1h", priority: "background" })
    expect((await call(key, "GET", `/v1/streams/${stream.body.id}`)).body.priority).toBe("background")
    expect((await listed(key, "/v1/streams")).find((s) => s.id === stream.body.id)?.priority).toBe("background")
    const plain = await call(key, "POST", "/v1/streams", { name: "plain" })
    expect(plain.body.priority).toBe("standard")
    refusedBad(await call(key, "POST", "/v1/streams", { name: "bad", priority: "later" }), "later")

    const inherits = await respond({ metadata: { stream_id: stream.body.id, custom_id: "a" } })
    expect(inherits.status, inherits.text).toBe(200)
    expect(inherits.body.priority).toBe("background")
    const own = await respond({ metadata: { stream_id: stream.body.id, custom_id: "b" }, priority: "high" })
    expect(own.body.priority).toBe("high")
    expect((await respond({ metadata: { stream_id: plain.body.id } })).body.priority).toBe("standard")
    const items = new Map((await listed(key, `/v1/responses?stream_id=${stream.body.id}`)).map((r) => [r.id, r.priority]))
    expect([items.get(inherits.body.id), items.get(own.body.id)]).toEqual(["background", "high"])
    expect((await listed(key, "/v1/responses?limit=100")).find((r) => r.id === high.body.id)?.priority).toBe("high")

    for (const body of [{ service_tier: "flex", priority: "high" }, { priority: "background" }]) {
      const refused = await respond(body)
      expect(refused.status, refused.text).toBe(400)
      expect(refused.body.error.param).toBe("priority")
      expect(refused.body.error.message).toContain("a flex request runs as standard")
    }
    const flex = await respond({ service_tier: "flex", priority: "standard" })
    expect(flex.status, flex.text).toBe(200)
    expect(flex.body).toMatchObject({ status: "completed", service_tier: "flex" })
    expect("priority" in flex.body).toBe(false)
    const interactive = await respond({})
    expect(interactive.body.status).toBe("completed")
    expect("priority" in interactive.body).toBe(false)
  })
})
