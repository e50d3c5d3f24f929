import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Webhook } from "standardwebhooks"
import { describe, expect, it } from "vitest"
import { chatRow } from "../support/client.js"
import { withSluice } from "../support/withSluice.js"

/*
 * Signed webhooks through the admin API, delivered to a real HTTP receiver in the test, retried on
 * the actors' TestClock across a restart of Sluice, and verified with the standardwebhooks package.
 */
interface Received {
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

const receiver = async (failFirst: number) => {
  const received: Array<Received> = []
  const server: Server = createServer((req, res) => {
    let body = ""
    req.on("data", (c) => (body += c))
    req.on("end", () => {
      received.push({ headers: req.headers, body })
      res.writeHead(received.length <= failFirst ? 500 : 204).end()
    })
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, received, close: () => new Promise((r) => server.close(r)) }
}

const eventually = async <T>(read: () => T | Promise<T>, done: (v: T) => boolean, what: string, step?: () => Promise<unknown>) => {
  const deadline = Date.now() + 30_000
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`)
    await step?.()
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe.each(["embedded", "nats"] as const)("signed webhooks on the %s event log", (backend) => {
  const f = withSluice({
    log: backend,
    inProcess: true,
    lifetime: "test",
    simulator: { models: ["fast"] },
    models: (url) => [{ id: "fast", upstream_url: url, timeout_ms: 600_000 }],
  })
  const api = () => f.api()
  const start = (options: { dataDir?: string; keepData?: boolean; startAt?: number } = {}) => f.start(options)

  it("delivers a batch's final event at least once across failures and a restart, signed, one webhook-id for every attempt", async () => {
    const hooks = await receiver(3)
    const dataDir = mkdtempSync(join(tmpdir(), "sluice-webhooks-"))
    try {
      await start({ dataDir, keepData: true })
      const created = await api().admin("POST", "/admin/v1/accounts/bootstrap/webhooks", { url: hooks.url, events: ["batch.completed", "batch.cancelled"] })
      expect(created.status, created.text).toBe(200)
      expect(created.body).toMatchObject({ object: "webhook", url: hooks.url, events: ["batch.completed", "batch.cancelled"] })
      expect(created.body.secret).toMatch(/^whsec_/)
      const { id: webhookId, secret } = created.body

      const batch = await api().call("POST", "/v1/batches", { requests: [chatRow("a", "hello", "fast")] })
      expect(batch.status).toBe(200)
      const done = await api().waitFinal(batch.body.id)
      expect(done.status).toBe("completed")

      // Attempts 1 and 2 fail on the first instance, the retry's backoff moved on its TestClock.
      await eventually(() => hooks.received.length, (n) => n >= 1, "the first attempt")
      await eventually(() => hooks.received.length, (n) => n >= 2, "the second attempt", () => f.sluice.adjust(2_000))
      await eventually(
        async () => (await api().admin("GET", `/admin/v1/webhooks/${webhookId}/deliveries`)).body.data[0].attempts,
        (n) => n === 2,
        "two attempts recorded",
      )
      const stoppedAt = await f.sluice.now()
      await f.stop()

      await start({ dataDir, keepData: true, startAt: stoppedAt })
      await eventually(() => hooks.received.length, (n) => n >= 4, "the attempts after the restart", () => f.sluice.adjust(5_000))
      const deliveries = await eventually(
        async () => (await api().admin("GET", `/admin/v1/webhooks/${webhookId}/deliveries`)).body.data,
        (d) => d[0]?.status === "delivered",
        "the delivery recorded",
      )
      expect(deliveries).toHaveLength(1)
      expect(deliveries[0]).toMatchObject({ object: "webhook.delivery", batch_id: batch.body.id, event: "batch.completed", attempts: 4, last_status: 204, next_attempt_at: null })

      const verifier = new Webhook(secret)
      for (const r of hooks.received) {
        expect(() => verifier.verify(r.body, r.headers as Record<string, string>)).not.toThrow()
        expect(() => new Webhook(`whsec_${Buffer.from("another secret").toString("base64")}`).verify(r.body, r.headers as Record<string, string>)).toThrow()
      }
      const ids = new Set(hooks.received.map((r) => r.headers["webhook-id"]))
      expect(ids.size).toBe(1)
      expect([...ids][0]).toBe(deliveries[0].id)
      // De-duplicated by webhook-id, the receiver has the event once: the final batch object.
      const once = [...new Map(hooks.received.map((r) => [r.headers["webhook-id"], JSON.parse(r.body)])).values()]
      expect(once).toHaveLength(1)
      expect(once[0]).toMatchObject({ type: "batch.completed", data: { id: batch.body.id, object: "batch", status: "completed" } })
      expect(once[0].data).toEqual(await (await api().call("GET", `/v1/batches/${batch.body.id}`)).body)
      // Nothing more arrives once delivered.
      await f.sluice.adjust(3_600_000)
      await new Promise((r) => setTimeout(r, 600))
      expect(hooks.received).toHaveLength(4)
    } finally {
      await hooks.close()
      await f.stop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 120_000)

  it("delivers only the events an endpoint asked for, and one endpoint's failures hold up no other's", async () => {
    const failing = await receiver(1_000)
    const fine = await receiver(0)
    try {
      await start()
      await api().admin("POST", "/admin/v1/accounts/bootstrap/webhooks", { url: failing.url })
      const onlyCancelled = await api().admin("POST", "/admin/v1/accounts/bootstrap/webhooks", { url: fine.url, events: ["batch.cancelled"] })
      const completedHook = await api().admin("POST", "/admin/v1/accounts/bootstrap/webhooks", { url: fine.url.replace("/hooks", "/done"), events: ["batch.completed"] })
      const batch = await api().call("POST", "/v1/batches", { requests: [chatRow("a", "hi", "fast")] })
      await api().waitFinal(batch.body.id)
      await eventually(() => fine.received.length, (n) => n >= 1, "the other endpoint's delivery")
      await new Promise((r) => setTimeout(r, 500))
      expect(fine.received).toHaveLength(1)
      expect(JSON.parse(fine.received[0]!.body).type).toBe("batch.completed")
      expect((await api().admin("GET", `/admin/v1/webhooks/${onlyCancelled.body.id}/deliveries`)).body.data).toEqual([])
      expect((await api().admin("GET", `/admin/v1/webhooks/${completedHook.body.id}/deliveries`)).body.data[0].status).toBe("delivered")
      expect(failing.received.length).toBeGreaterThanOrEqual(1)
    } finally {
      await failing.close()
      await fine.close()
    }
  })

  it("refuses a wrong token, an unknown account or webhook, a bad URL or events, and a URL back to Sluice, storing nothing", async () => {
    const sluice = await start()
    // An account of its own: on NATS the log, and so the other tests' webhooks, outlive each test.
    const account = `hooks-${backend}`
    expect((await api().admin("POST", "/admin/v1/accounts", { id: account, tier: "internal" })).status).toBe(200)
    const post = (body: unknown, id = account) => api().admin("POST", `/admin/v1/accounts/${id}/webhooks`, body)
    const wrongToken = await f.api().call("POST", `/admin/v1/accounts/${account}/webhooks`, { url: "http://example.invalid/x" }, { authorization: "Bearer nope" })
    expect(wrongToken.status).toBe(401)
    expect((await post({ url: "http://127.0.0.1:9/x" }, "no-such-account")).status).toBe(404)
    const port = new URL(sluice.url).port
    for (const [body, param] of [
      [{ url: "ftp://127.0.0.1/x" }, "url"],
      [{ url: "not a url" }, "url"],
      [{ url: `http://127.0.0.1:${port}/v1/batches` }, "url"],
      [{ url: `http://localhost:${port}/` }, "url"],
      [{ url: "http://127.0.0.1:9/x", events: ["batch.started"] }, "events"],
      [{ url: "http://127.0.0.1:9/x", events: [] }, "events"],
      [{ url: "http://127.0.0.1:9/x", secret: "mine" }, "secret"],
    ] as const) {
      const refused = await post(body)
      expect(refused.status, `${JSON.stringify(body)}: ${refused.text}`).toBe(400)
      expect(refused.body.error).toMatchObject({ type: "invalid_request_error", param })
    }
    expect((await api().admin("GET", `/admin/v1/accounts/${account}/webhooks`)).body.data).toEqual([])
    const made = await post({ url: "http://127.0.0.1:9/x" })
    const listed = await api().admin("GET", `/admin/v1/accounts/${account}/webhooks`)
    expect(listed.body.data).toEqual([{ id: made.body.id, object: "webhook", account_id: account, url: "http://127.0.0.1:9/x", events: ["batch.completed", "batch.failed", "batch.expired", "batch.cancelled"], created_at: made.body.created_at }])
    expect(listed.text).not.toContain(made.body.secret)
    expect((await api().admin("DELETE", `/admin/v1/webhooks/${made.body.id}`)).body).toEqual({ id: made.body.id, object: "webhook.deleted", deleted: true })
    expect((await api().admin("DELETE", `/admin/v1/webhooks/${made.body.id}`)).status).toBe(404)
    expect((await api().admin("GET", `/admin/v1/webhooks/${made.body.id}/deliveries`)).status).toBe(404)
  })
})
