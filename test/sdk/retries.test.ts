import { afterEach, describe, expect, it } from "vitest"
import { freePort } from "../support/ports.js"
import { apiError, json, reset, startScriptedServer } from "../support/scriptedServer.js"
import { backoffDelayMs, defaultRetryPolicy, retryAfterMs } from "../../src/sdk/backoff.js"
import { Transport } from "../../src/sdk/transport.js"
import { type Batch, type RetryNotice, SluiceApiError, SluiceClient, SluiceConnectionError } from "sluice/sdk"
import { rejection } from "../support/rejection.js"

const batch = (id: string): Batch => ({
  id,
  object: "batch",
  endpoint: "/v1/chat/completions",
  errors: null,
  input_file_id: null,
  completion_window: "24h",
  status: "validating",
  output_file_id: null,
  error_file_id: null,
  created_at: 1,
  in_progress_at: null,
  expires_at: 2,
  finalizing_at: null,
  completed_at: null,
  failed_at: null,
  expired_at: null,
  cancelling_at: null,
  cancelled_at: null,
  request_counts: { total: 1, completed: 0, failed: 0 },
  metadata: null,
  cost_usd: 0,
  error: null,
  rerun_of: null,
  priority: "standard",
  rows_ahead: 0,
  estimated_completion_at: null,
  usage: { input_tokens: 0, input_tokens_details: { cached_tokens: 0 }, output_tokens: 0, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 0 },
  waiting_on: null,
})

const oneRow = { requests: [{ custom_id: "a", body: { model: "m", messages: [{ role: "user", content: "hi" }] } }] }

let servers: Array<{ close: () => Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()))
  servers = []
})

const serve = async (...replies: Parameters<typeof startScriptedServer>[0]) => {
  const server = await startScriptedServer(replies)
  servers.push(server)
  return server
}

const clientOf = (url: string, options: { maxRetries?: number; fetch?: typeof fetch } = {}) =>
  new SluiceClient({ apiKey: "k", baseUrl: `${url}/v1`, retryBaseDelayMs: 1, ...options })

describe("the SDK's retries, against a scripted HTTP server", () => {
  it("a 429 with Retry-After is retried, and the retry's answer is returned", async () => {
    const server = await serve(apiError(429, "slow down", "rate_limit_error", "rate_limit_exceeded", { "retry-after": "0" }), json(200, batch("batch_1")))
    expect((await clientOf(server.url).getBatch("batch_1")).id).toBe("batch_1")
    expect(server.seen.map((r) => `${r.method} ${r.url}`)).toEqual(["GET /v1/batches/batch_1", "GET /v1/batches/batch_1"])
    expect(server.seen[1]?.headers.authorization).toBe("Bearer k")
  })

  it("the wait before a retry is never shorter than the server's Retry-After", async () => {
    const server = await serve(apiError(429, "slow down", "rate_limit_error", null, { "retry-after": "2" }), json(200, batch("b")))
    const waits: Array<number> = []
    const transport = new Transport({
      baseUrl: `${server.url}/v1`,
      token: "k",
      retry: { ...defaultRetryPolicy, baseDelayMs: 1 },
      fetch,
      sleep: async (ms) => void waits.push(ms),
    })
    await transport.json("GET", "/batches/b")
    expect(waits).toHaveLength(1)
    expect(waits[0]).toBeGreaterThanOrEqual(2_000)
  })

  it("a GET answered 500 or dropped is retried; after maxRetries the last error is thrown", async () => {
    const recovered = await serve(apiError(500, "boom"), reset, json(200, batch("b")))
    expect((await clientOf(recovered.url).getBatch("b")).id).toBe("b")
    expect(recovered.seen).toHaveLength(3)

    const down = await serve(apiError(503, "log down", "server_error", "service_unavailable"))
    const error = await rejection(clientOf(down.url, { maxRetries: 2 }).getBatch("b"))
    expect(error).toBeInstanceOf(SluiceApiError)
    expect(error).toMatchObject({ status: 503, type: "server_error", code: "service_unavailable", param: null })
    expect(down.seen).toHaveLength(3)
  })

  it.each([
    [429, 2],
    [503, 2],
    [500, 2],
    [502, 2],
    [409, 2],
    [400, 1],
    [422, 1],
  ])("creating a batch answered %i is sent %i time(s) in all, every time with one Idempotency-Key", async (status, sent) => {
    const server = await serve(apiError(status, "no"), json(200, batch("created")))
    const submitted = clientOf(server.url).submitBatch(oneRow)
    if (sent === 2) expect((await submitted).id).toBe("created")
    else expect(await rejection(submitted)).toMatchObject({ status })
    expect(server.seen).toHaveLength(sent)
    expect(server.seen.every((r) => r.method === "POST" && r.url === "/v1/batches")).toBe(true)
    expect(JSON.parse(server.seen[0]?.body ?? "")).toEqual(oneRow)
    const keys = new Set(server.seen.map((r) => r.headers["idempotency-key"]))
    expect(keys.size).toBe(1)
    expect([...keys][0]).toMatch(/^[0-9a-f-]{36}$/)
  })

  it("creating a batch whose connection drops after the body was sent is retried with its key, which the server answers once", async () => {
    const server = await serve(reset, json(200, batch("created")))
    expect((await clientOf(server.url).submitBatch(oneRow)).id).toBe("created")
    expect(server.seen).toHaveLength(2)
    expect(server.seen[1]?.headers["idempotency-key"]).toBe(server.seen[0]?.headers["idempotency-key"])
  })

  it("two creates carry two keys", async () => {
    const server = await serve(json(200, batch("a")), json(200, batch("b")))
    const client = clientOf(server.url)
    await client.submitBatch(oneRow)
    await client.submitBatch(oneRow)
    expect(server.seen[0]?.headers["idempotency-key"]).not.toBe(server.seen[1]?.headers["idempotency-key"])
  })

  it("creating a batch on a refused connection is retried, as nothing was sent", async () => {
    const port = await freePort()
    let calls = 0
    const counting: typeof fetch = (input, init) => {
      calls++
      return fetch(input, init)
    }
    const error = await rejection(clientOf(`http://127.0.0.1:${port}`, { maxRetries: 3, fetch: counting }).submitBatch(oneRow))
    expect(error).toBeInstanceOf(SluiceConnectionError)
    expect((error as Error).message).toContain(`POST http://127.0.0.1:${port}/v1/batches failed`)
    expect(calls).toBe(4)
  })

  it("onRetry hears of each retry before its wait, with the call, the reason and the delay", async () => {
    const server = await serve(apiError(503, "log down", "server_error", "service_unavailable"), reset, json(200, batch("b")))
    const notices: Array<RetryNotice> = []
    const client = new SluiceClient({ apiKey: "k", baseUrl: `${server.url}/v1`, retryBaseDelayMs: 10, onRetry: (n) => notices.push(n) })
    expect((await client.getBatch("b")).id).toBe("b")
    expect(notices.map(({ delayMs, reason, ...n }) => n)).toEqual([
      { method: "GET", url: `${server.url}/v1/batches/b`, retry: 1, maxRetries: 5 },
      { method: "GET", url: `${server.url}/v1/batches/b`, retry: 2, maxRetries: 5 },
    ])
    expect(notices[0]?.reason).toBe("answered 503: log down")
    expect(notices[1]?.reason).toMatch(/^fetch failed/)
    expect(notices.map((n) => n.delayMs >= 5 && n.delayMs <= 20)).toEqual([true, true])
  })

  it("a quota 429 (insufficient_quota) is not retried: it lasts until 00:00 UTC", async () => {
    const server = await serve(apiError(429, "quota used up", "insufficient_quota", "insufficient_quota"), json(200, batch("b")))
    expect(await rejection(clientOf(server.url).getBatch("b"))).toMatchObject({ status: 429, type: "insufficient_quota" })
    expect(server.seen).toHaveLength(1)
  })

  it("a Retry-After longer than a minute is not waited for", async () => {
    const server = await serve(apiError(503, "later", "server_error", null, { "retry-after": "3600" }), json(200, batch("b")))
    expect(await rejection(clientOf(server.url).getBatch("b"))).toMatchObject({ status: 503 })
    expect(server.seen).toHaveLength(1)
  })

  it("an error answer that is not OpenAI's envelope still becomes a SluiceApiError", async () => {
    const server = await serve((res) => {
      res.writeHead(404, { "content-type": "text/html" })
      res.end("<h1>nope</h1>")
    })
    expect(await rejection(clientOf(server.url).getBatch("b"))).toMatchObject({ status: 404, type: "unknown_error", code: null, message: expect.stringContaining("<h1>nope</h1>") })
  })
})

describe("backoff", () => {
  const policy = { ...defaultRetryPolicy, baseDelayMs: 100, maxDelayMs: 1_000 }

  it("doubles from the base, jittered within the upper half, capped at the maximum", () => {
    for (const [retry, ceiling] of [[0, 100], [1, 200], [2, 400], [3, 800], [4, 1_000], [10, 1_000]] as const) {
      expect(backoffDelayMs(retry, policy, 0, undefined)).toBe(ceiling / 2)
      expect(backoffDelayMs(retry, policy, 1, undefined)).toBe(ceiling)
    }
  })

  it("never waits less than the server asked", () => {
    expect(backoffDelayMs(0, policy, 0.5, 5_000)).toBe(5_000)
    expect(backoffDelayMs(3, policy, 1, 10)).toBe(800)
  })

  it("reads Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("2030-01-01T00:00:00Z")
    expect(retryAfterMs("3", now)).toBe(3_000)
    expect(retryAfterMs("0.5", now)).toBe(500)
    expect(retryAfterMs("Tue, 01 Jan 2030 00:00:10 GMT", now)).toBe(10_000)
    expect(retryAfterMs(null, now)).toBeUndefined()
    expect(retryAfterMs("soon", now)).toBeUndefined()
  })
})
