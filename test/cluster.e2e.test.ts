import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { Effect, Schedule } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as JetStreamEventLog from "../src/eventlog/JetStreamEventLog.js"
import { LOG_RETRY_AFTER_SECONDS } from "../src/http/errors.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { chatRow, client } from "./support/client.js"
import { type NatsCluster, startNatsCluster } from "./support/natsCluster.js"
import { freePort } from "./support/ports.js"
import { type Sluice, startSluice } from "./support/sluice.js"
import { storedEvents, settlesWithoutStart, terminalsPerRow } from "./support/storedEvents.js"
import { waitFor } from "./support/waitFor.js"

/*
 * A replicated deployment: Sluice on a three-node nats-server cluster on loopback, its stream kept in
 * three replicas, NATS_URL listing every node. Losing the node that leads the stream mid-batch, then
 * bringing it back, loses and repeats no row.
 */

const MODEL = "glm-5.3-flash"
const rows = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => chatRow(`${prefix}-${i}`, `${prefix} row ${i}`))
/**
 * Rows enough to outlast the leader's kill and the read after it by seconds (about 270 rows a second at 8
 * slots on the 20 ms simulator): at 200 the batch had sometimes finished by the time that read answered.
 */
const TOTAL = 800

/** Every result, asked again after the Retry-After of an "unavailable at the moment" answer (up to 10 times). */
const resultsWhenAvailable = async (api: ReturnType<typeof client>, batchId: string): Promise<Array<any>> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await api.allResults(batchId)
    } catch (error) {
      if (attempt >= 10 || !String(error).includes('"code":"batch_inference_unavailable"')) throw error
      await new Promise((r) => setTimeout(r, LOG_RETRY_AFTER_SECONDS * 1000))
    }
  }
}

describe("Sluice on a three-node NATS cluster with SLUICE_NATS_REPLICAS=3", () => {
  let cluster: NatsCluster
  let sim: Simulator
  let sluice: Sluice | undefined

  beforeAll(async () => {
    cluster = await startNatsCluster()
    sim = await startSimulator({ latencyMs: 20, jitterMs: 20, seed: 17 })
  })
  afterAll(async () => {
    await sluice?.stop("SIGKILL")
    sluice?.cleanup()
    await sim?.close()
    await cluster?.stop()
  })

  it("raises an existing stream's replicas to the configured count, and never lowers them", async () => {
    const stream = "SCALED"
    const replicasAfterOpening = (replicas: number) =>
      Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const log = yield* JetStreamEventLog.makeRaw({ url: cluster.url, stream, subjects: ["scaled.>"], replicas })
            // Right after the stream is placed, the other nodes may not yet route its subjects to it.
            yield* log
              .append([{ subject: "scaled.a", data: new TextEncoder().encode(String(replicas)) }])
              .pipe(Effect.retry(Schedule.intersect(Schedule.spaced("100 millis"), Schedule.recurs(50))))
          }),
        ),
      ).then(async () => {
        const nc = await connect({ servers: cluster.nodes.map((n) => n.url) })
        try {
          return (await (await jetstreamManager(nc)).streams.info(stream)).config.num_replicas
        } finally {
          await nc.close()
        }
      })
    expect(await replicasAfterOpening(1)).toBe(1)
    expect(await replicasAfterOpening(3)).toBe(3)
    expect(await replicasAfterOpening(1)).toBe(3)
  })

  it("keeps the stream in three replicas, and a kill -9 of its leader mid-batch, then its restart, loses and repeats no row", { timeout: 180_000 }, async () => {
    sluice = await startSluice({
      models: [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 8 }],
      // A server that is not there heads the list: the clients connect to the others.
      natsUrl: `nats://127.0.0.1:${await freePort()},${cluster.url}`,
      env: { SLUICE_NATS_REPLICAS: "3" },
    })
    const nc = await connect({ servers: cluster.nodes.map((n) => n.url) })
    const info = await (await jetstreamManager(nc)).streams.info("SLUICE")
    await nc.close()
    expect(info.config.num_replicas).toBe(3)
    expect(info.cluster?.replicas).toHaveLength(2)

    const api = client(sluice.url)
    const created = await api.call("POST", "/v1/batches", { requests: rows("r", TOTAL) })
    expect(created.status).toBe(200)
    const id = created.body.id as string
    const completed = async () => (await api.call("GET", `/v1/batches/${id}`)).body.request_counts.completed as number

    await waitFor("40 rows have completed", async () => (await completed()) >= 40, { timeoutMs: 60_000 })
    const leader = await cluster.leaderOf("SLUICE")
    await cluster.halt(leader, "SIGKILL")
    const atKill = await completed().catch(() => 0)
    expect(atKill).toBeLessThan(TOTAL)
    // The other two nodes elect a new leader and the batch goes on without the killed one.
    await waitFor("40 more rows have completed with the old leader down", async () => (await completed().catch(() => 0)) >= atKill + 40, {
      timeoutMs: 60_000,
    })
    expect(await cluster.leaderOf("SLUICE")).not.toBe(leader)
    await cluster.start(leader)
    await cluster.replicasCurrent("SLUICE", 3)

    const final = await api.waitFinal(id, 60_000)
    expect(final.status).toBe("completed")
    expect(final.request_counts).toEqual({ total: TOTAL, completed: TOTAL, failed: 0 })
    // While the restarted node rejoins, a JetStream request may time out: Sluice then answers the seed's
    // 404 "unavailable at the moment" with Retry-After, which a client honours and asks again.
    const results = await resultsWhenAvailable(api, id)
    expect(results.map((r) => r.custom_id)).toEqual(rows("r", TOTAL).map((r) => r.custom_id))
    for (const [i, r] of results.entries()) {
      expect(r.status).toBe("completed")
      expect(r.response.body.choices[0].message.content).toContain(`r row ${i}`)
    }
    expect(await sluice.stop("SIGTERM")).toBe(0)

    const log = await storedEvents({ dataDir: sluice.dataDir, natsUrl: cluster.url }, id)
    expect(terminalsPerRow(log, TOTAL)).toEqual(Array.from({ length: TOTAL }, () => 1))
    expect(settlesWithoutStart(log)).toEqual([])
    expect(log.filter((e) => e.type === "row_completed")).toHaveLength(TOTAL)
    expect(log.filter((e) => e.type === "batch_completed")).toHaveLength(1)
    // Through the restarted node alone, a client reads the same history.
    const fromRestarted = await storedEvents({ dataDir: sluice.dataDir, natsUrl: cluster.nodes[leader]!.url }, id)
    expect(fromRestarted.map((e) => e.seq)).toEqual(log.map((e) => e.seq))
  })
})
