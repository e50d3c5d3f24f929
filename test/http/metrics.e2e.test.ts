import Database from "better-sqlite3"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { chatRow, client } from "../support/client.js"
import { type InProcessSluice, startInProcessSluice } from "../support/inProcessSluice.js"
import { type Scrape, scrape } from "../support/prometheus.js"
import { ADMIN_TOKEN } from "../support/sluice.js"
import { waitFor } from "../support/waitFor.js"

const MODEL = "glm-5.3-flash"
const STALL = "stall"
const final = ["completed", "failed", "expired", "cancelled"]

/*
 * /metrics scraped before and after batches run against the simulator with its faults: each family
 * moves by what the batches did, read back from the batches' own results and events.
 */
describe("/metrics moves by what the batches did", () => {
  let sim: Simulator
  let sluice: InProcessSluice
  const api = () => client(sluice.url)

  beforeAll(async () => {
    sim = await startSimulator()
    sluice = await startInProcessSluice({
      models: [
        { id: MODEL, upstream_url: sim.url, batch_concurrency: 4, timeout_ms: 30_000 },
        // One slot, and a timeout on the actors' clock: a hung row holds the slot until the clock passes it.
        { id: STALL, upstream_url: sim.url, upstream_model: MODEL, batch_concurrency: 1, timeout_ms: 30_000 },
      ],
      config: { maxUnfinishedBatches: 1 },
    })
  })
  afterAll(async () => {
    await sluice?.stop()
    await sim?.close()
  })

  /**
   * Moves the clock one backoff step, but not while a row's request is on its way to or from the
   * simulator (a loaded machine can take longer over that than the steps add up to, and the attempt
   * would time out): only while every running row's request sits at the simulator, hanging.
   */
  const stepWhenNothingIsOnItsWay = async (http: ReturnType<typeof client>, batchId: string) => {
    const running = (await http.allResults(batchId)).filter((r) => r.status === "running").length
    if (running === 0 || sim.stats().inFlight >= running) await sluice.adjust(5_000)
  }

  const runToEnd = async (batchId: string, http = api()) => {
    for (let step = 0; step < 400; step++) {
      const batch = await http.call("GET", `/v1/batches/${batchId}`)
      if (final.includes(batch.body.status)) return batch.body
      await stepWhenNothingIsOnItsWay(http, batchId)
      await new Promise((r) => setTimeout(r, 5))
    }
    throw new Error(`batch ${batchId} did not finish: ${(await api().call("GET", `/v1/batches/${batchId}`)).text}`)
  }
  const delta = (before: Scrape, after: Scrape, name: string, labels?: Record<string, string>) =>
    after.value(name, labels) - before.value(name, labels)

  it("20 rows, 3 of which fail twice with 503: 6 retries with reason 503, 26 attempts and 20 completed", async () => {
    const before = await scrape(sluice.url)
    const rows = Array.from({ length: 20 }, (_, i) =>
      chatRow(`r${i}`, i < 3 ? `flaky ${i} ${simDirective.fail(2, 503)}` : `fine ${i}`, MODEL),
    )
    const created = await api().call("POST", "/v1/batches", { requests: rows })
    expect(created.status).toBe(200)
    const batch = await runToEnd(created.body.id)
    expect(batch.request_counts).toEqual({ total: 20, completed: 20, failed: 0 })
    await waitFor("the batch to be counted completed", async () => (await scrape(sluice.url)).value("sluice_batches", { status: "completed" }) >= 1)
    const after = await scrape(sluice.url)

    expect(delta(before, after, "sluice_rows_settled_total", { model: MODEL, outcome: "completed", code: "" })).toBe(20)
    expect(delta(before, after, "sluice_upstream_retries_total", { model: MODEL, reason: "503" })).toBe(6)
    expect(delta(before, after, "sluice_upstream_attempts_total", { model: MODEL })).toBe(26)
    expect(delta(before, after, "sluice_upstream_latency_seconds_count", { model: MODEL, outcome: "ok" })).toBe(20)
    expect(delta(before, after, "sluice_upstream_latency_seconds_count", { model: MODEL, outcome: "503" })).toBe(6)
    expect(delta(before, after, "sluice_row_first_start_seconds_count", { model: MODEL })).toBe(20)
    expect(delta(before, after, "sluice_rows_started_total", { model: MODEL, priority: "standard", order: "turn" })).toBe(26)
    expect(delta(before, after, "sluice_batches", { status: "completed" })).toBe(1)
    expect(delta(before, after, "sluice_http_request_duration_seconds_count", { method: "POST", route: "/v1/batches", status: "200" })).toBe(1)
    // Every event of the batch was appended once: as many as the embedded log holds on its subjects.
    const log = new Database(join(sluice.dataDir, "log.sqlite"), { readonly: true })
    const messages = log.prepare(`SELECT subject, data FROM messages WHERE subject LIKE ?`).all(`batch.${created.body.id}.%`) as Array<{
      subject: string
      data: Buffer
    }>
    log.close()
    // Row events travel in their model's lane windows, several to a message.
    const events = messages.flatMap((m) =>
      m.subject.includes(".lane.") ? (JSON.parse(m.data.toString()) as { events: Array<{ type: string }> }).events : [{ type: m.subject.split(".")[2]! }],
    )
    expect(events.filter((e) => e.type === "row_retrying")).toHaveLength(6)
    expect(delta(before, after, "sluice_eventlog_events_appended_total")).toBe(events.length)
    expect(delta(before, after, "sluice_eventlog_messages_appended_total")).toBe(messages.length)
    expect(delta(before, after, "sluice_eventlog_append_seconds_count")).toBeGreaterThan(0)
    expect(after.value("sluice_rows_queued", { model: MODEL, account: "bootstrap" })).toBe(0)
    expect(after.value("sluice_batch_slots_limit", { model: MODEL })).toBeGreaterThanOrEqual(1)
    expect(after.value("sluice_leases_held", { model: MODEL })).toBe(1)
    expect(after.value("sluice_leases_held", { model: STALL })).toBe(1)
    expect(after.value("sluice_lease_changes_total", { model: MODEL, change: "taken" })).toBe(1)
    expect(after.value("sluice_eventlog_available")).toBe(1)
    expect(after.families.has("process_cpu_user_seconds_total")).toBe(true)
    expect(after.families.has("nodejs_eventloop_lag_seconds")).toBe(true)
  })

  it("a row the upstream refuses counts as failed with its code", async () => {
    const before = await scrape(sluice.url)
    const created = await api().call("POST", "/v1/batches", {
      requests: [chatRow("bad", `refused ${simDirective.status(400)}`, MODEL), chatRow("ok", "fine", MODEL)],
    })
    await runToEnd(created.body.id)
    const after = await scrape(sluice.url)
    expect(delta(before, after, "sluice_rows_settled_total", { model: MODEL, outcome: "failed", code: "invalid_request" })).toBe(1)
    expect(delta(before, after, "sluice_rows_settled_total", { model: MODEL, outcome: "completed", code: "" })).toBe(1)
    expect(delta(before, after, "sluice_upstream_retries_total", { model: MODEL, reason: "400" })).toBe(0)
    expect(delta(before, after, "sluice_upstream_latency_seconds_count", { model: MODEL, outcome: "400" })).toBe(1)
  })

  it("queued rows by account, slots in use against the limit, refused creates, cancelled and expired rows", async () => {
    const before = await scrape(sluice.url)
    // Refused creates, by status; the limit on unfinished batches is checked first, so 400 while there is room.
    expect((await api().call("POST", "/v1/batches", { requests: [] })).status).toBe(400)
    const huge = `{"requests":[{"custom_id":"big","body":{"model":"${STALL}","messages":[{"role":"user","content":"${"x".repeat(33 * 1024 * 1024)}"}]}}]}`
    expect((await api().call("POST", "/v1/batches", huge)).status).toBe(413)
    // A: a row that hangs holds the stall model's one slot, two more wait behind it.
    const a = await api().call("POST", "/v1/batches", {
      requests: [chatRow("a0", `hangs ${simDirective.hang}`, STALL), chatRow("a1", "one", STALL), chatRow("a2", "two", STALL)],
    })
    expect(a.status).toBe(200)
    await waitFor("the hung row to reach the simulator", () => sim.stats().inFlight === 1)
    // C: another account's batch, queued behind A, and paused once the account is no longer internal.
    await api().admin("POST", "/admin/v1/accounts", { id: "late", tier: "internal" })
    const lateKey = (await api().admin("POST", "/admin/v1/accounts/late/keys")).body.key as string
    const late = client(sluice.url, lateKey)
    const c = await late.call("POST", "/v1/batches", { requests: [chatRow("c0", "zero", STALL), chatRow("c1", "one", STALL)] })
    expect(c.status).toBe(200)
    expect((await api().admin("PATCH", "/admin/v1/accounts/late", { tier: "standard" })).status).toBe(200)

    const busy = await scrape(sluice.url)
    expect(busy.value("sluice_rows_queued", { model: STALL, account: "bootstrap" })).toBe(2)
    expect(busy.value("sluice_rows_queued", { model: STALL, account: "late" })).toBe(2)
    expect(busy.value("sluice_rows_queued_by_priority", { model: STALL, priority: "standard" })).toBe(4)
    expect(busy.value("sluice_rows_running", { model: STALL })).toBe(1)
    expect(busy.value("sluice_batch_slots_in_use", { model: STALL })).toBe(1)
    expect(busy.value("sluice_batch_slots_limit", { model: STALL })).toBe(1)
    expect(busy.value("sluice_batches", { status: "in_progress" }) + busy.value("sluice_batches", { status: "validating" })).toBeGreaterThanOrEqual(2)
    const admin = await fetch(`${sluice.url}/admin/v1/models`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    const stall = ((await admin.json()) as { data: Array<Record<string, unknown>> }).data.find((m) => m.id === STALL)
    expect(stall).toMatchObject({ slots_in_use: 1, slots_limit: 1, queued: 4, running: 1, queued_by_account: { bootstrap: 2, late: 2 } })

    // A standard account, then a full one.
    expect((await late.call("POST", "/v1/batches", { requests: [chatRow("x", "x", STALL)] })).status).toBe(403)
    expect((await api().call("POST", "/v1/batches", { requests: [chatRow("x", "x", STALL)] })).status).toBe(429)
    // A rerun is a create too: of a batch that is not there, 404.
    expect((await api().call("POST", "/v1/batches/batch_none/rerun")).status).toBe(404)
    const refused = await scrape(sluice.url)
    for (const reason of ["400", "403", "429", "413", "404"]) expect(delta(before, refused, "sluice_batch_creates_refused_total", { reason })).toBe(1)

    // Cancel A: its two queued rows are cancelled together, the hung one when its timeout passes.
    expect((await api().call("POST", `/v1/batches/${a.body.id}/cancel`)).status).toBe(200)
    await sluice.adjust(31_000)
    const aDone = await runToEnd(a.body.id)
    expect(aDone.status).toBe("cancelled")
    // C's rows never start: the completion window closes on them.
    await sluice.adjust(25 * 3_600_000)
    const cDone = await runToEnd(c.body.id, late)
    expect(cDone.status).toBe("expired")
    const after = await scrape(sluice.url)

    const statuses = async (batchId: string, http: ReturnType<typeof client>) =>
      (await http.allResults(batchId)).map((r: { status: string }) => r.status)
    const aRows = await statuses(a.body.id, api())
    const cRows = await statuses(c.body.id, late)
    expect(aRows.filter((s) => s === "cancelled")).toHaveLength(3)
    expect(cRows).toEqual(["expired", "expired"])
    expect(delta(before, after, "sluice_rows_settled_total", { model: STALL, outcome: "cancelled", code: "" })).toBe(3)
    expect(delta(before, after, "sluice_rows_settled_total", { model: STALL, outcome: "expired", code: "" })).toBe(2)
    expect(delta(before, after, "sluice_upstream_latency_seconds_count", { model: STALL, outcome: "timeout" })).toBe(1)
    expect(after.value("sluice_rows_queued", { model: STALL, account: "late" })).toBe(0)
    expect(after.value("sluice_rows_queued", { model: STALL, account: "bootstrap" })).toBe(0)
    expect(delta(before, after, "sluice_batches", { status: "cancelled" })).toBe(1)
    expect(delta(before, after, "sluice_batches", { status: "expired" })).toBe(1)
  })

  it("an interactive request in flight takes one of its model's batch slots until it ends", async () => {
    const aborted = new AbortController()
    const request = fetch(`${sluice.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer hyi-test-bootstrap-key", "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: `wait ${simDirective.hang}` }] }),
      signal: aborted.signal,
    }).catch(() => undefined)
    await waitFor("the interactive request to be counted", async () => (await scrape(sluice.url)).value("sluice_interactive_in_flight", { model: MODEL }) === 1)
    const during = await scrape(sluice.url)
    expect(during.value("sluice_batch_slots_limit", { model: MODEL })).toBe(during.value("sluice_batch_concurrency", { model: MODEL }) - 1 - during.value("sluice_upstream_pushback", { model: MODEL }))
    aborted.abort()
    await request
    await waitFor("the interactive request to end", async () => (await scrape(sluice.url)).value("sluice_interactive_in_flight", { model: MODEL }) === 0)
  })

  it("webhook attempts count by outcome once recorded, and a delivery failing past its three days counts as given up", async () => {
    let answer = 500
    const received: Array<number> = []
    const receiver = createServer((req, res) => {
      req.resume().on("end", () => {
        received.push(answer)
        res.writeHead(answer).end()
      })
    })
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r))
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`
      const hook = await api().admin("POST", "/admin/v1/accounts/bootstrap/webhooks", { url, events: ["batch.completed"] })
      expect(hook.status, hook.text).toBe(200)
      const attempts = async () => {
        const now = await scrape(sluice.url)
        return { ok: now.value("sluice_webhook_attempts_total", { outcome: "ok" }), failed: now.value("sluice_webhook_attempts_total", { outcome: "failed" }) }
      }
      const before = await scrape(sluice.url)
      expect(before.families.has("sluice_webhook_attempts_total")).toBe(true)
      const start = await attempts()

      const first = await api().call("POST", "/v1/batches", { requests: [chatRow("w", "fine", MODEL)] })
      await runToEnd(first.body.id)
      await waitFor("the failed attempt to be counted", async () => (await attempts()).failed === start.failed + 1)
      answer = 204
      await waitFor("the retry to succeed", async () => {
        await sluice.adjust(10_000)
        return (await attempts()).ok === start.ok + 1
      })
      expect(received).toEqual([500, 204])

      answer = 503
      const second = await api().call("POST", "/v1/batches", { requests: [chatRow("w2", "fine", MODEL)] })
      await runToEnd(second.body.id)
      await waitFor("the second delivery's first attempt", async () => (await attempts()).failed === start.failed + 2)
      // Moved past the delivery's three days (and short of the batch's seven days of retention) it fails
      // and none follows. TestClock passes through every sleeper's time on its way, so attempts may come
      // at times between, each counted as failed; any of them not given up is due by the end.
      await sluice.adjust(3.5 * 86_400_000)
      await waitFor("the delivery to be given up", async () =>
        (await scrape(sluice.url)).value("sluice_webhook_deliveries_given_up_total") === before.value("sluice_webhook_deliveries_given_up_total") + 1,
      )
      const secondDelivery = async () =>
        ((await api().admin("GET", `/admin/v1/webhooks/${hook.body.id}/deliveries`)).body.data as Array<{ batch_id: string; status: string; attempts: number }>).find(
          (d) => d.batch_id === second.body.id,
        )!
      const gaveUp = await secondDelivery()
      expect(gaveUp.status).toBe("failed")
      expect(gaveUp.attempts).toBeGreaterThanOrEqual(2)
      expect((await attempts()).failed).toBe(start.failed + 1 + gaveUp.attempts)
      await sluice.adjust(3_600_000)
      await new Promise((r) => setTimeout(r, 1_000))
      expect((await secondDelivery()).attempts).toBe(gaveUp.attempts)
      expect((await attempts()).failed).toBe(start.failed + 1 + gaveUp.attempts)
      expect(received.filter((status) => status === 503)).toHaveLength(gaveUp.attempts)
    } finally {
      await new Promise((r) => receiver.close(r))
    }
  })

  it("the projections' lag is reported, and is nothing once they have caught up", async () => {
    await waitFor("the projections to catch up", async () => (await scrape(sluice.url)).value("sluice_projection_lag_events") === 0)
    const now = await scrape(sluice.url)
    expect(now.families.has("sluice_projection_lag_seconds")).toBe(true)
    expect(now.value("sluice_projection_lag_seconds")).toBe(0)
  })
})
