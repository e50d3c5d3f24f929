import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type NatsServer, startNatsServer } from "./support/natsServer.js"
import { scrape } from "./support/prometheus.js"
import { type Sluice, startSluice } from "./support/sluice.js"
import { waitFor } from "./support/waitFor.js"

const get = async (url: string) => {
  const response = await fetch(url)
  return { status: response.status, body: (await response.json()) as Record<string, any> }
}

describe("health, readiness, the metrics token and CORS", () => {
  let nats: NatsServer
  let sluice: Sluice

  beforeAll(async () => {
    nats = await startNatsServer()
    sluice = await startSluice({
      natsUrl: nats.url,
      env: { SLUICE_INSTANCE_ID: "ready-test-1", SLUICE_METRICS_TOKEN: "scrape-me", SLUICE_CORS_ORIGINS: "http://tools.example" },
    })
  })
  afterAll(async () => {
    await nats?.freeze(false)
    await sluice?.stop()
    sluice?.cleanup()
    await nats?.stop()
  })

  it("/healthz answers while the process serves, with no key", async () => {
    expect(await get(`${sluice.url}/healthz`)).toEqual({ status: 200, body: { status: "ok", instance: "ready-test-1" } })
  })

  it("/readyz is 200 with the log's head and the projections' lag, 503 with the reason while nats-server is stopped, and 200 once it resumes; sluice_eventlog_available follows", async () => {
    const available = async () => (await scrape(sluice.url, "scrape-me")).value("sluice_eventlog_available")
    const ready = await get(`${sluice.url}/readyz`)
    expect(ready.status).toBe(200)
    expect(ready.body).toMatchObject({ status: "ready", instance: "ready-test-1", projections: { lag_events: 0 } })
    expect(ready.body.log.head).toBe(ready.body.projections.applied)
    expect(await available()).toBe(1)

    await nats.freeze(true)
    let stopped = await get(`${sluice.url}/readyz`)
    await waitFor("/readyz to answer 503", async () => (stopped = await get(`${sluice.url}/readyz`)).status === 503)
    expect(stopped.body).toMatchObject({ status: "unavailable", instance: "ready-test-1" })
    expect(stopped.body.reason).toMatch(/event log/)
    // The process still serves.
    expect((await get(`${sluice.url}/healthz`)).status).toBe(200)
    // The log's probe (every 5 s, 3 s to answer) finds it gone, not the head's 2 s look behind /readyz.
    await waitFor("sluice_eventlog_available to be 0", async () => (await available()) === 0, { timeoutMs: 15_000, everyMs: 250 })

    await nats.freeze(false)
    await waitFor("/readyz to answer 200 again", async () => (await get(`${sluice.url}/readyz`)).status === 200)
    await waitFor("sluice_eventlog_available to be 1 again", async () => (await available()) === 1, { timeoutMs: 15_000, everyMs: 250 })
  })

  it("/metrics wants SLUICE_METRICS_TOKEN when it is set", async () => {
    const none = await fetch(`${sluice.url}/metrics`)
    expect(none.status).toBe(401)
    expect(((await none.json()) as { error: { type: string } }).error.type).toBe("authentication_error")
    expect((await fetch(`${sluice.url}/metrics`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401)
    const scraped = await fetch(`${sluice.url}/metrics`, { headers: { authorization: "Bearer scrape-me" } })
    expect(scraped.status).toBe(200)
    expect(scraped.headers.get("content-type")).toMatch(/^text\/plain/)
    expect(await scraped.text()).toContain("# TYPE sluice_rows_settled_total counter")
  })

  it("lets the origins in SLUICE_CORS_ORIGINS call the API from a browser, and no other", async () => {
    const preflight = (origin: string) =>
      fetch(`${sluice.url}/v1/batches`, {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" },
      })
    const allowed = await preflight("http://tools.example")
    expect(allowed.status).toBeLessThan(300)
    expect(allowed.headers.get("access-control-allow-origin")).toBe("http://tools.example")
    expect(allowed.headers.get("access-control-allow-headers")).toContain("authorization")
    const other = await preflight("http://elsewhere.example")
    // A browser lets a page read the answer only if this header names its own origin.
    expect(other.headers.get("access-control-allow-origin")).not.toBe("http://elsewhere.example")
    const read = await fetch(`${sluice.url}/v1/batches`, { headers: { origin: "http://tools.example", authorization: "Bearer hyi-test-bootstrap-key" } })
    expect(read.headers.get("access-control-allow-origin")).toBe("http://tools.example")
  })
})
