import { jetstream } from "@nats-io/jetstream"
import { Kvm } from "@nats-io/kv"
import { connect } from "@nats-io/transport-node"
import { afterEach, describe, expect, it } from "vitest"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { chatRow, client } from "./support/client.js"
import { type NatsServer, startNatsServer } from "./support/natsServer.js"
import { type Sluice, startSluice } from "./support/sluice.js"
import { storedEvents } from "./support/storedEvents.js"
import { waitFor } from "./support/waitFor.js"

/*
 * A batch whose rows have all settled reaches its final status on every instance, whoever claimed how
 * it ends: here an instance that claimed its cancellation in `sluice-fates` and went away before the
 * log held it (its append lost, or the instance killed between the two).
 */
describe("a batch whose every row has settled", () => {
  let nats: NatsServer | undefined
  const sims: Array<Simulator> = []
  const instances: Array<Sluice> = []

  afterEach(async () => {
    for (const s of instances.splice(0)) {
      await s.stop("SIGKILL")
      s.cleanup()
    }
    for (const sim of sims.splice(0)) await sim.close()
    await nats?.stop()
  })

  it("becomes final on both instances when the ending that stands was claimed by an instance that never wrote it", async () => {
    nats = await startNatsServer()
    // model-b's rows settle last, on the instance that runs it; the owner of model-a, the batch's first
    // model, is the one that reconciles the batch.
    const catalog = []
    for (const [model, latencyMs] of [["model-a", 200], ["model-b", 2_000]] as const) {
      const sim = await startSimulator({ models: [model], latencyMs })
      sims.push(sim)
      catalog.push({ id: model, upstream_url: sim.url, batch_concurrency: 4 })
    }
    for (const name of ["one", "two"]) {
      instances.push(
        await startSluice({ natsUrl: nats.url, models: catalog, env: { SLUICE_INSTANCE_ID: name, SLUICE_LEASE_TTL_MS: "3000" } }),
      )
    }
    const [one, two] = instances.map((s) => client(s.url))
    const owners = async () => new Set(((await one!.admin("GET", "/admin/v1/leases")).body.data as Array<{ owner: string }>).map((l) => l.owner))
    await waitFor("the models to be spread over both instances", async () => (await owners()).size === 2, { timeoutMs: 30_000 })
    const requests = ["model-a", "model-b"].flatMap((model) => Array.from({ length: 3 }, (_, i) => chatRow(`${model}-${i}`, `row ${i}`, model)))
    const batch = await one!.call("POST", "/v1/batches", { requests })
    expect(batch.status).toBe(200)
    const id = batch.body.id as string

    // The cancellation another instance claimed while the rows ran, and never appended.
    const nc = await connect({ servers: nats.url })
    try {
      const fates = await new Kvm(jetstream(nc)).open("sluice-fates")
      await fates.create(id, JSON.stringify({ type: "batch_cancelling", batch_id: id, at: Date.now(), cancelled_rows: 0 }))
    } finally {
      await nc.close()
    }

    for (const api of [one!, two!]) {
      await waitFor(
        `batch ${id} to be final through each instance`,
        async () => {
          const seen = await api.call("GET", `/v1/batches/${id}`)
          return seen.body.status === "cancelled"
        },
        { timeoutMs: 60_000, everyMs: 200 },
      )
    }
    const counts = await Promise.all([one!, two!].map(async (api) => (await api.call("GET", `/v1/batches/${id}`)).body.request_counts))
    expect(counts[0]).toEqual(counts[1])
    const events = await storedEvents({ dataDir: instances[0]!.dataDir, natsUrl: nats.url }, id)
    expect(events.filter((e) => e.type === "batch_cancelling")).toHaveLength(1)
    expect(events.filter((e) => e.type === "batch_cancelled")).toHaveLength(1)
    expect(events.filter((e) => e.type === "batch_completed")).toHaveLength(0)
  }, 120_000)
})
