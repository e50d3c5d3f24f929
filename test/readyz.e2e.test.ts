import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type NatsServer, startNatsServer } from "./support/natsServer.js"
import { type Sluice, startSluice } from "./support/sluice.js"
import { waitFor } from "./support/waitFor.js"

const get = async (url: string) => {
  const response = await fetch(url)
  return { status: response.status, body: (await response.json()) as Record<string, any> }
}

describe("health and readiness", () => {
  let nats: NatsServer
  let sluice: Sluice

  beforeAll(async () => {
    nats = await startNatsServer()
    sluice = await startSluice({ natsUrl: nats.url, env: { SLUICE_INSTANCE_ID: "ready-test-1" } })
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

  it("/readyz is 200 with the log's head and the projections' lag, 503 with the reason while nats-server is stopped, and 200 once it resumes", async () => {
    const ready = await get(`${sluice.url}/readyz`)
    expect(ready.status).toBe(200)
    expect(ready.body).toMatchObject({ status: "ready", instance: "ready-test-1", projections: { lag_events: 0 } })
    expect(ready.body.log.head).toBe(ready.body.projections.applied)

    await nats.freeze(true)
    let stopped = await get(`${sluice.url}/readyz`)
    await waitFor("/readyz to answer 503", async () => (stopped = await get(`${sluice.url}/readyz`)).status === 503)
    expect(stopped.body).toMatchObject({ status: "unavailable", instance: "ready-test-1" })
    expect(stopped.body.reason).toMatch(/event log/)
    // The process still serves.
    expect((await get(`${sluice.url}/healthz`)).status).toBe(200)

    await nats.freeze(false)
    await waitFor("/readyz to answer 200 again", async () => (await get(`${sluice.url}/readyz`)).status === 200)
  })
})
