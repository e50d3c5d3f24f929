import { type Figure, atLeast, atMost, figure } from "../figures.js"
import { runPlainClient } from "../plainClient.js"
import { ADMIN_TOKEN, MODELS, type Sluice, startNats, startSluice } from "../processes.js"
import { sluiceRowsPerSecond } from "../rowsPerSecond.js"
import { batchBody, smallRows, upstreamBodies } from "../rows.js"
import type { Scenario } from "../scenario.js"
import { type SluiceApi, sluiceApi } from "../sluiceApi.js"
import { ratios } from "../stats.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** The service's default lease TTL: the failover figure is measured as a deployment would run. */
const LEASE_TTL_MS = 10_000
/** The failover model's slots: few, so its batch runs through the kill and the takeover. */
const FAILOVER_SLOTS = 4

interface Instance {
  readonly id: string
  readonly sluice: Sluice
  readonly api: SluiceApi
}

const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}` }
const admin = async <A>(instance: Instance, path: string): Promise<A> => {
  const response = await fetch(`${instance.sluice.url}${path}`, { headers: adminHeaders })
  if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`)
  return (await response.json()) as A
}

/** Which instance holds each model's lease, as one instance sees the lease bucket. */
const owners = async (instance: Instance): Promise<Map<string, string>> => {
  const leases = await admin<{ data: Array<{ model: string; owner: string }> }>(instance, "/admin/v1/leases")
  return new Map(leases.data.map((l) => [l.model, l.owner]))
}

/** Rows of `model` the instance's own actor has at the upstream now (0 where it does not own the model). */
const runningOn = async (instance: Instance, model: string): Promise<number> => {
  const models = await admin<{ data: Array<{ id: string; running: number }> }>(instance, "/admin/v1/models")
  return models.data.find((m) => m.id === model)?.running ?? 0
}

/**
 * Two Sluice processes on one nats-server, each with every model: B2 and B3 with the batch created
 * and polled through the instance that does not own its model, and the time a killed owner's model
 * takes to run again on the other instance.
 */
export const b14ScaleOut: Scenario = {
  id: "B14",
  title: "two instances on one nats-server: throughput, utilization, failover",
  uses: [],
  run: async (ctx) => {
    const { throughputRows: rows, slots, latencyMs, trials } = ctx.sizes
    const [fastSim, slowSim] = [await ctx.sim(0), await ctx.sim(latencyMs)]
    const nats = await startNats()
    const models = [
      { id: MODELS.fast, upstream_url: fastSim.url, batch_concurrency: slots },
      { id: MODELS.slow, upstream_url: slowSim.url, batch_concurrency: slots },
      { id: MODELS.queued, upstream_url: slowSim.url, batch_concurrency: FAILOVER_SLOTS },
    ]
    let lives = 0
    const start = async (): Promise<Instance> => {
      const id = `bench-${++lives}`
      ctx.progress(`B14: starting Sluice ${id} on the shared nats-server`)
      const sluice = await startSluice({ models, natsUrl: nats.url, env: { SLUICE_INSTANCE_ID: id, SLUICE_LEASE_TTL_MS: String(LEASE_TTL_MS) } })
      return { id, sluice, api: sluiceApi(sluice.url) }
    }
    const instances = [await start(), await start()]
    try {
      const settled = async () => {
        for (;;) {
          const held = await owners(instances[0]!)
          if (models.every((m) => instances.some((i) => held.get(m.id) === i.id))) return held
          await sleep(100)
        }
      }
      const other = async (model: string) => {
        const owner = (await settled()).get(model)
        return instances.find((i) => i.id !== owner)!
      }

      const fastBatch = smallRows(rows, MODELS.fast)
      const plain: Array<number> = []
      const b2: Array<number> = []
      const b3: Array<number> = []
      const ideal = slots / (latencyMs / 1000)
      for (let t = 0; t < trials; t++) {
        plain.push(rows / ((await runPlainClient(fastSim.url, upstreamBodies(fastBatch), slots)) / 1000))
        b2.push(await sluiceRowsPerSecond((await other(MODELS.fast)).api, batchBody(fastBatch), rows))
        b3.push(await sluiceRowsPerSecond((await other(MODELS.slow)).api, batchBody(smallRows(rows, MODELS.slow)), rows))
        ctx.progress(`B14 trial ${t + 1}: B2 ${b2[t]!.toFixed(0)} rows/s (plain ${plain[t]!.toFixed(0)}), B3 ${b3[t]!.toFixed(0)} of ${ideal.toFixed(0)} rows/s`)
      }

      // Failover: a batch runs on the queued model's owner, which is killed; the time until the other
      // instance's actor has the model's rows at the upstream again.
      const failoverMs: Array<number> = []
      const failoverRows = Math.ceil(((FAILOVER_SLOTS * 1000) / latencyMs) * ((4 * LEASE_TTL_MS) / 1000))
      for (let t = 0; t < trials; t++) {
        const ownerId = (await settled()).get(MODELS.queued)
        const owner = instances.find((i) => i.id === ownerId)!
        const survivor = instances.find((i) => i !== owner)!
        const created = await survivor.api.create(batchBody(smallRows(failoverRows, MODELS.queued)))
        while ((await runningOn(owner, MODELS.queued)) < FAILOVER_SLOTS) await sleep(20)
        process.kill(owner.sluice.pid, "SIGKILL")
        const killedAt = performance.now()
        while ((await runningOn(survivor, MODELS.queued)) === 0) await sleep(20)
        failoverMs.push(performance.now() - killedAt)
        ctx.progress(`B14 failover trial ${t + 1}: ${(failoverMs[t]! / 1000).toFixed(1)} s from kill -9 to the next row started by ${survivor.id}`)
        // Every row still completes, once each, on the survivor.
        const done = await survivor.api.waitFinal(created.id, 200)
        if (done.batch.status !== "completed" || done.batch.request_counts.completed !== failoverRows) {
          throw new Error(`failover batch ${created.id} ended ${done.batch.status} with ${JSON.stringify(done.batch.request_counts)}`)
        }
        owner.api.close()
        await owner.sluice.stop()
        instances[instances.indexOf(owner)] = await start()
      }

      const scenario = `2 instances, one nats-server`
      const figures: Array<Figure> = [
        figure({ id: "B14", scenario: `${scenario}, ${rows.toLocaleString("en")} rows, sim 0 ms, ${slots} slots`, backend: "nats", figure: "B2 via the non-owner: Sluice ÷ plain client", samples: ratios(b2, plain), digits: 2, target: atLeast(0.5) }),
        figure({ id: "B14", scenario: `${scenario}, ${rows.toLocaleString("en")} rows, sim ${latencyMs} ms, ${slots} slots`, backend: "nats", figure: `B3 via the non-owner: rows/s ÷ (${slots} slots ÷ ${latencyMs} ms)`, samples: b3.map((r) => r / ideal), digits: 3, target: atLeast(0.97) }),
        figure({ id: "B14", scenario: `${scenario}, lease TTL ${LEASE_TTL_MS / 1000} s`, backend: "nats", figure: "failover: kill -9 of the owner → next row started by the new one, s", samples: failoverMs.map((ms) => ms / 1000), digits: 1, target: atMost((2 * LEASE_TTL_MS) / 1000) }),
      ]
      return {
        figures,
        notes: [
          `B14: two Sluice processes (their own data directories) on one nats-server. B2 and B3 as in their own rows, but each batch created and polled through the instance that does not hold its model's lease; the one-instance B2 (nats) and B3 rows of the same run are the baselines. Failover: a ${failoverRows}-row batch on a ${FAILOVER_SLOTS}-slot model; once all its slots run on the owner, the owner gets kill -9, and the figure is the time until the survivor's own actor reports the model's rows at the upstream (GET /admin/v1/models, polled every 20 ms). The batch must then complete with every row.`,
        ],
      }
    } finally {
      for (const i of instances) {
        i.api.close()
        await i.sluice.stop()
      }
      await nats.stop()
    }
  },
}
