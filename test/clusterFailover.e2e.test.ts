import { afterAll, describe, expect, it } from "vitest"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { chatRow, client } from "./support/client.js"
import { type NatsCluster, startNatsCluster } from "./support/natsCluster.js"
import { type CatalogEntry, type Sluice, startSluice } from "./support/sluice.js"
import { storedEvents, settlesWithoutStart, terminalsPerRow } from "./support/storedEvents.js"
import { waitFor } from "./support/waitFor.js"

/*
 * Three Sluice processes on a three-node nats-server cluster (the stream and the KV buckets in three
 * replicas), against the simulator as a real server: batches on two models from two accounts, and
 * interactive traffic through every instance, while, in an order drawn at random, the owner of one
 * model is killed with SIGKILL, the owner of another is paused with SIGSTOP for longer than the lease
 * TTL (then resumed: it must not write), and one NATS node is restarted. Checked from the simulators'
 * own counts, the API and the log.
 */

const TTL_MS = 3_000
const SLOTS = 3
const MODELS = ["model-a", "model-b"] as const
const CHAT = "model-chat"
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const rows = (prefix: string, n: number, model: string) =>
  Array.from({ length: n }, (_, i) => chatRow(`${prefix}-${i}`, `${prefix} row ${i}`, model))

interface Lease {
  readonly model: string
  readonly owner: string
  readonly revision: number
}

describe("three instances on a three-node NATS cluster", () => {
  let cluster: NatsCluster | undefined
  const sims = new Map<string, Simulator>()
  const instances = new Map<string, Sluice>()
  const dead = new Set<string>()

  afterAll(async () => {
    for (const s of instances.values()) {
      s.signal("SIGCONT")
      await s.stop("SIGKILL")
      s.cleanup()
    }
    for (const sim of sims.values()) await sim.close()
    await cluster?.stop()
  })

  it("loses and repeats no row through a kill -9, a pause past the TTL and a NATS node restart", { timeout: 300_000 }, async () => {
    cluster = await startNatsCluster(3)
    const catalog: Array<CatalogEntry> = []
    for (const id of [...MODELS, CHAT]) {
      const sim = await startSimulator({ models: [id], latencyMs: 80, jitterMs: 40, seed: id.length })
      sims.set(id, sim)
      catalog.push({ id, upstream_url: sim.url, batch_concurrency: SLOTS })
    }
    for (const name of ["one", "two", "three"]) {
      instances.set(
        name,
        await startSluice({
          natsUrl: cluster.url,
          models: catalog,
          env: { SLUICE_INSTANCE_ID: name, SLUICE_LEASE_TTL_MS: String(TTL_MS), SLUICE_NATS_REPLICAS: "3" },
        }),
      )
    }
    const alive = () => [...instances].filter(([name]) => !dead.has(name)).map(([, s]) => s)
    const api = (key?: string) => client(alive()[0]!.url, key)
    const leases = async () => (await api().admin("GET", "/admin/v1/leases")).body.data as ReadonlyArray<Lease>
    await waitFor("every model to be leased", async () => (await leases()).length === catalog.length, { timeoutMs: 30_000 })

    const accounts: Array<string> = []
    for (const name of ["acme", "globex"]) {
      const account = await api().admin("POST", "/admin/v1/accounts", { name })
      const key = await api().admin("POST", `/admin/v1/accounts/${account.body.id}/keys`, {})
      accounts.push(key.body.key as string)
    }
    const batches: Array<{ id: string; total: number; key: string }> = []
    for (const [i, key] of accounts.entries()) {
      for (const model of MODELS) {
        const through = client([...instances.values()][(i + batches.length) % 3]!.url, key)
        const created = await through.call("POST", "/v1/batches", { requests: rows(`${i}-${model}`, 90, model) })
        expect(created.status, created.text).toBe(200)
        batches.push({ id: created.body.id, total: 90, key })
      }
    }

    // Interactive requests through every instance until the end, each answered 200 or refused 429/503.
    let chatting = true
    const statuses: Array<number> = []
    const chatters = [...instances.entries()].map(async ([name, s]) => {
      while (chatting) {
        if (dead.has(name)) return
        try {
          const answer = await client(s.url, accounts[0]).call("POST", "/v1/chat/completions", {
            model: CHAT,
            messages: [{ role: "user", content: `hello from ${name}` }],
          })
          statuses.push(answer.status)
        } catch {
          // A paused or killed instance does not answer.
        }
        await sleep(100)
      }
    })

    const leaseOf = async (model: string) => (await leases().catch(() => [] as ReadonlyArray<Lease>)).find((l) => l.model === model)
    // Between a lease's lapse and its take-over no one holds it.
    const ownerOf = async (model: string) => {
      let lease: Lease | undefined
      await waitFor(`a lease of ${model}`, async () => (lease = await leaseOf(model)) !== undefined, { timeoutMs: 10 * TTL_MS })
      return lease!.owner
    }
    const faults: Array<() => Promise<void>> = [
      async () => {
        const victim = await ownerOf("model-a")
        expect(await instances.get(victim)!.stop("SIGKILL")).toBe("SIGKILL")
        dead.add(victim)
        await waitFor("model-a to have a new owner", async () => ((await leaseOf("model-a"))?.owner ?? victim) !== victim, {
          timeoutMs: 10 * TTL_MS,
        })
      },
      async () => {
        const paused = await ownerOf("model-b")
        if (dead.has(paused)) return
        const before = (await leaseOf("model-b"))!
        instances.get(paused)!.signal("SIGSTOP")
        dead.add(paused)
        await waitFor("model-b to have a new owner", async () => {
          const now = await leaseOf("model-b")
          return now !== undefined && now.revision > before.revision && now.owner !== paused
        }, { timeoutMs: 10 * TTL_MS })
        await sleep(TTL_MS)
        instances.get(paused)!.signal("SIGCONT")
        dead.delete(paused)
      },
      async () => {
        await cluster!.halt(1)
        await sleep(1_500)
        await cluster!.start(1)
      },
    ]
    for (let i = faults.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1))
      ;[faults[i], faults[j]] = [faults[j]!, faults[i]!]
    }
    for (const fault of faults) {
      await sleep(1_000)
      await fault()
    }

    for (const batch of batches) {
      const final = await client(alive()[0]!.url, batch.key).waitFinal(batch.id, 120_000)
      expect(final.status).toBe("completed")
      expect(final.request_counts).toEqual({ total: batch.total, completed: batch.total, failed: 0 })
      // Every instance reads it the same (the resumed one once it has reconnected to NATS).
      for (const s of alive()) {
        await waitFor(`${s.url} to read ${batch.id} the same`, async () => {
          const seen = await client(s.url, batch.key).call("GET", `/v1/batches/${batch.id}`).catch(() => undefined)
          return JSON.stringify(seen?.body?.request_counts) === JSON.stringify(final.request_counts)
        }, { timeoutMs: 30_000 })
      }
    }
    chatting = false
    await Promise.all(chatters)
    expect(statuses.length).toBeGreaterThan(0)
    expect(statuses.every((s) => s === 200 || s === 429 || s === 503)).toBe(true)

    for (const model of MODELS) expect(sims.get(model)!.stats().maxInFlight).toBeLessThanOrEqual(SLOTS)
    // The test's own reads of the stream: a JetStream request to a node restarted a moment ago may
    // time out while the cluster settles, so each read is tried a few times.
    const logOf = async (batchId: string) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await storedEvents({ dataDir: alive()[0]!.dataDir, natsUrl: cluster!.url }, batchId)
        } catch (error) {
          if (attempt >= 5) throw error
          await sleep(1_000)
        }
      }
    }
    for (const batch of batches) {
      const log = await logOf(batch.id)
      // No result written twice, none lost.
      expect(terminalsPerRow(log, batch.total)).toEqual(Array.from({ length: batch.total }, () => 1))
      expect(settlesWithoutStart(log)).toEqual([])
      const starts = new Map<number, number>()
      for (const e of log) if (e.type === "row_started") starts.set(e.row!, (starts.get(e.row!) ?? 0) + 1)
      expect(Math.max(...starts.values())).toBeLessThanOrEqual(8)
    }
    // Fencing: on each lane, no window of an older lease follows one of a newer lease (the paused owner
    // woke up and wrote nothing after the new owner's claim).
    for (const batch of batches) {
      const log = await logOf(batch.id)
      const newest = new Map<string, number>()
      for (const e of log) {
        if (e.lease === undefined) continue
        expect(e.lease).toBeGreaterThanOrEqual(newest.get(e.subject) ?? 0)
        newest.set(e.subject, e.lease)
      }
    }
  })
})
