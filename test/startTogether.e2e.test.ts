import { afterEach, describe, expect, it } from "vitest"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { chatRow, client } from "./support/client.js"
import { type NatsCluster, startNatsCluster } from "./support/natsCluster.js"
import { type Sluice, startSluice } from "./support/sluice.js"
import { waitFor } from "./support/waitFor.js"

/*
 * Start-up is idempotent: several instances started at the same moment on a fresh three-node cluster
 * all create or bind the same stream and KV buckets (in three replicas, each of which elects a leader
 * while the others ask for it) and all become ready.
 */

const MODEL = "glm-5.3-flash"

describe("instances started at the same moment on a fresh cluster", () => {
  let cluster: NatsCluster | undefined
  let sim: Simulator | undefined
  let sluices: Array<Sluice> = []

  afterEach(async () => {
    await Promise.all(sluices.map((s) => s.stop("SIGKILL")))
    for (const s of sluices) s.cleanup()
    sluices = []
    await sim?.close()
    await cluster?.stop()
  })

  for (const count of [2, 3]) {
    it(`${count} instances all become ready and serve one batch through each`, { timeout: 180_000 }, async () => {
      cluster = await startNatsCluster()
      sim = await startSimulator({ latencyMs: 5, seed: 3 })
      const started = await Promise.allSettled(
        Array.from({ length: count }, (_, i) =>
          startSluice({
            natsUrl: cluster!.url,
            models: [{ id: MODEL, upstream_url: sim!.url, batch_concurrency: 4 }],
            env: { SLUICE_NATS_REPLICAS: "3", SLUICE_INSTANCE_ID: `together-${i + 1}`, SLUICE_LEASE_TTL_MS: "3000" },
          }),
        ),
      )
      sluices = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []))
      const failures = started.flatMap((s) => (s.status === "rejected" ? [String(s.reason)] : []))
      expect(failures).toEqual([])
      for (const s of sluices) {
        await waitFor(`${s.url} is ready`, async () => (await fetch(`${s.url}/readyz`).catch(() => undefined))?.status === 200, {
          timeoutMs: 60_000,
          everyMs: 100,
        })
      }
      for (const [i, s] of sluices.entries()) {
        const api = client(s.url)
        const created = await api.call("POST", "/v1/batches", { requests: [chatRow(`t-${i}-a`, "a"), chatRow(`t-${i}-b`, "b")] })
        expect(created.status, created.text).toBe(200)
        const done = await api.waitFinal(created.body.id)
        expect(done.status).toBe("completed")
        expect(done.request_counts).toMatchObject({ total: 2, completed: 2 })
      }
    })
  }
})
