import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { chatRow, client } from "./support/client.js"
import { type NatsServer, startNatsServer } from "./support/natsServer.js"
import { type Sluice, startSluice } from "./support/sluice.js"
import { waitFor } from "./support/waitFor.js"

/*
 * An instance with SLUICE_RUN_MODELS=false beside one that runs the models, on one nats-server: it takes
 * no lease and is not among the instances the models are spread over, so the owner keeps every model
 * (no hand-over to it), while it takes creates and answers reads of what the owner runs.
 */
const TTL_MS = 2_000
const MODELS = ["model-x", "model-y", "model-z"]

describe("an instance that runs no models", () => {
  let nats: NatsServer
  let sim: Simulator
  let owner: Sluice
  let replica: Sluice

  beforeAll(async () => {
    nats = await startNatsServer()
    sim = await startSimulator({ models: MODELS, latencyMs: 20 })
    const models = MODELS.map((id) => ({ id, upstream_url: sim.url, batch_concurrency: 2 }))
    const env = { SLUICE_LEASE_TTL_MS: String(TTL_MS) }
    // The replica starts first: were it among the instances, some models would be assigned to it.
    replica = await startSluice({ natsUrl: nats.url, models, env: { ...env, SLUICE_INSTANCE_ID: "replica", SLUICE_RUN_MODELS: "false" } })
    owner = await startSluice({ natsUrl: nats.url, models, env: { ...env, SLUICE_INSTANCE_ID: "owner" } })
  }, 60_000)
  afterAll(async () => {
    for (const s of [owner, replica]) {
      await s?.stop("SIGKILL")
      s?.cleanup()
    }
    await sim?.close()
    await nats?.stop()
  })

  it("leaves every model to the other instance, takes a create, and reads what the other runs", async () => {
    const admin = client(replica.url)
    const leases = async () => (await admin.admin("GET", "/admin/v1/leases")).body.data as ReadonlyArray<{ model: string; owner: string }>
    await waitFor("every model leased", async () => (await leases()).length === MODELS.length, { timeoutMs: 20_000 })
    const requests = MODELS.flatMap((model) => Array.from({ length: 10 }, (_, i) => chatRow(`${model}-${i}`, `row ${i}`, model)))
    const created = await client(replica.url).call("POST", "/v1/batches", { requests })
    expect(created.status, created.text).toBe(200)
    const final = await client(replica.url).waitFinal(created.body.id, 60_000)
    expect(final.status).toBe("completed")
    expect(final.request_counts).toEqual({ total: 30, completed: 30, failed: 0 })
    const page = await client(replica.url).call("GET", `/v1/batches/${created.body.id}/results?limit=100`)
    expect(page.body.data).toHaveLength(30)
    // Several lease rounds later, still every model with the owner: none was handed over to the replica.
    await new Promise((r) => setTimeout(r, TTL_MS * 2))
    expect((await leases()).map((l) => l.owner)).toEqual(MODELS.map(() => "owner"))
    const models = (await admin.admin("GET", "/admin/v1/models")).body.data as ReadonlyArray<{ id: string; running: number }>
    expect(models.filter((m) => MODELS.includes(m.id)).map((m) => m.running)).toEqual(MODELS.map(() => 0))
  })

  it("does not take a model over when its owner dies", async () => {
    await owner.stop("SIGKILL")
    const created = await client(replica.url).call("POST", "/v1/batches", { requests: [chatRow("left", "left alone", "model-x")] })
    expect(created.status, created.text).toBe(200)
    await new Promise((r) => setTimeout(r, TTL_MS * 3))
    const leases = (await client(replica.url).admin("GET", "/admin/v1/leases")).body.data as ReadonlyArray<unknown>
    expect(leases).toEqual([])
    const batch = await client(replica.url).call("GET", `/v1/batches/${created.body.id}`)
    expect(batch.body.request_counts.completed).toBe(0)
  })
})
