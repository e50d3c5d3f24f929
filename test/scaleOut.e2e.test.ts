import { afterEach, describe, expect, it } from "vitest"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { chatRow, client } from "./support/client.js"
import { type NatsServer, startNatsServer } from "./support/natsServer.js"
import { scrape } from "./support/prometheus.js"
import { type CatalogEntry, type Sluice, startSluice } from "./support/sluice.js"
import { storedEvents, terminalsPerRow } from "./support/storedEvents.js"
import { waitFor } from "./support/waitFor.js"

/*
 * Two Sluice processes on one nats-server, each with its own data directory and the same catalog: each
 * model's slots have one owner in the whole deployment, a batch reads the same through either instance
 * as soon as the call that wrote it has answered, and a killed owner's model is taken over.
 */

const TTL_MS = 3_000
const SLOTS = 4
const rows = (prefix: string, n: number, model: string) =>
  Array.from({ length: n }, (_, i) => chatRow(`${prefix}-${i}`, `${prefix} row ${i}`, model))

interface Lease {
  readonly model: string
  readonly owner: string
}

describe("several instances on one JetStream", () => {
  let nats: NatsServer | undefined
  const sims: Array<Simulator> = []
  const instances: Array<Sluice> = []
  const killed = new Set<Sluice>()

  afterEach(async () => {
    killed.clear()
    for (const s of instances.splice(0)) {
      await s.stop("SIGKILL")
      s.cleanup()
    }
    for (const sim of sims.splice(0)) await sim.close()
    await nats?.stop()
    nats = undefined
  })

  const setUp = async (models: ReadonlyArray<string>, latencyMs: number) => {
    nats = await startNatsServer()
    const catalog: Array<CatalogEntry> = []
    for (const id of models) {
      // One simulator per model: its own high-water mark is the model's in-flight maximum.
      const sim = await startSimulator({ models: [id], latencyMs })
      sims.push(sim)
      catalog.push({ id, upstream_url: sim.url, batch_concurrency: SLOTS })
    }
    const start = (name: string) =>
      startSluice({ natsUrl: nats!.url, models: catalog, env: { SLUICE_INSTANCE_ID: name, SLUICE_LEASE_TTL_MS: String(TTL_MS) } })
    instances.push(await start("one"), await start("two"))
    // Asked of the last instance still running.
    const leases = async () => {
      const alive = instances.filter((s) => !killed.has(s))
      return (await client(alive[alive.length - 1]!.url).admin("GET", "/admin/v1/leases")).body.data as ReadonlyArray<Lease>
    }
    await waitFor("every model to be leased", async () => (await leases()).length === models.length, { timeoutMs: 20_000 })
    return { leases }
  }

  it("runs each model's slots on one instance, spread over both, and reads every write through either", async () => {
    const { leases } = await setUp(["model-a", "model-b"], 60)
    // Spread: not both models on the first instance to start.
    await waitFor("the models to be spread over both instances", async () => new Set((await leases()).map((l) => l.owner)).size === 2, { timeoutMs: 20_000 })
    // Each instance's lease changes leave it holding what the lease store says it holds: one take more than it gave up.
    const owners = new Map((await leases()).map((l) => [l.model, l.owner]))
    for (const [instance, name] of [[instances[0]!, "one"], [instances[1]!, "two"]] as const) {
      const changes = await scrape(instance.url)
      for (const model of ["model-a", "model-b"]) {
        const change = (c: string) => changes.value("sluice_lease_changes_total", { model, change: c })
        expect(change("taken") - change("handed_over") - change("lost"), `${name}, ${model}`).toBe(owners.get(model) === name ? 1 : 0)
      }
    }
    const [one, two] = instances.map((s) => client(s.url))
    const created = []
    // A batch of each model created through each instance: before leases, each instance ran its own slots.
    for (const [api, name] of [[one!, "x"], [two!, "y"]] as const) {
      for (const model of ["model-a", "model-b"]) {
        const batch = await api.call("POST", "/v1/batches", { requests: rows(`${name}-${model}`, 30, model) })
        expect(batch.status).toBe(200)
        // Through the other instance at once: the read waits for its projections to reach the write.
        const other = api === one ? two! : one!
        const seen = await other.call("GET", `/v1/batches/${batch.body.id}`)
        expect(seen.status).toBe(200)
        expect(seen.body.request_counts.total).toBe(30)
        created.push(batch.body.id as string)
      }
    }
    for (const id of created) {
      const final = await one!.waitFinal(id, 60_000)
      expect(final.request_counts).toEqual({ total: 30, completed: 30, failed: 0 })
      expect(await two!.call("GET", `/v1/batches/${id}`).then((r) => r.body.status)).toBe("completed")
    }
    for (const sim of sims) {
      expect(sim.stats().maxInFlight).toBeLessThanOrEqual(SLOTS)
      // More only if a lease moved mid-run (a slow renewal on a loaded machine): its running rows ran again.
      expect(sim.stats().received).toBeGreaterThanOrEqual(60)
    }
    for (const id of created) {
      const log = await storedEvents({ dataDir: instances[0]!.dataDir, natsUrl: nats!.url }, id)
      expect(terminalsPerRow(log, 30)).toEqual(Array.from({ length: 30 }, () => 1))
    }
    // A cancel through one instance reads cancelled through the other as soon as it has answered.
    const slow = await one!.call("POST", "/v1/batches", { requests: rows("slow", 40, "model-a") })
    const cancelled = await two!.call("POST", `/v1/batches/${slow.body.id}/cancel`)
    expect(cancelled.status).toBe(200)
    expect(["cancelling", "cancelled"]).toContain((await one!.call("GET", `/v1/batches/${slow.body.id}`)).body.status)
    const ended = await two!.waitFinal(slow.body.id, 30_000)
    expect(ended.status).toBe("cancelled")
  })

  it("a kill -9 of a model's owner: the other instance takes the model over and every row completes once", async () => {
    const { leases } = await setUp(["model-a"], 150)
    const owner = (await leases())[0]!.owner
    const victim = instances.find((_, i) => ["one", "two"][i] === owner)!
    const survivor = instances.find((s) => s !== victim)!
    const api = client(survivor.url)
    const batch = await api.call("POST", "/v1/batches", { requests: rows("k", 60, "model-a") })
    await waitFor("rows to complete before the kill", async () => (await api.call("GET", `/v1/batches/${batch.body.id}`)).body.request_counts.completed >= 12)
    expect(await victim.stop("SIGKILL")).toBe("SIGKILL")
    killed.add(victim)
    const receivedAtKill = sims[0]!.stats().received
    // How soon is B10's figure in `npm run bench`; here, only that it happens.
    await waitFor("the survivor to take the model over", async () => sims[0]!.stats().received > receivedAtKill, { timeoutMs: 10 * TTL_MS })
    const final = await api.waitFinal(batch.body.id, 60_000)
    expect(final.request_counts).toEqual({ total: 60, completed: 60, failed: 0 })
    expect(sims[0]!.stats().maxInFlight).toBeLessThanOrEqual(SLOTS)
    expect((await leases()).map((l) => l.owner)).toEqual([survivor === instances[0] ? "one" : "two"])
    const log = await storedEvents({ dataDir: survivor.dataDir, natsUrl: nats!.url }, batch.body.id)
    expect(terminalsPerRow(log, 60)).toEqual(Array.from({ length: 60 }, () => 1))
    const starts = new Map<number, number>()
    for (const e of log) if (e.type === "row_started") starts.set(e.row!, (starts.get(e.row!) ?? 0) + 1)
    expect(Math.max(...starts.values())).toBeLessThanOrEqual(8)
    // The rows the killed owner had at the model ran again, as their next attempt.
    expect(log.some((e) => e.type === "row_started" && e.attempt! > 1)).toBe(true)
  })
})
