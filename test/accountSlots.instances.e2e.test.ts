import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { UNACKED_GROWTH } from "../src/domain/account/slotSharing.js"
import { simDirective } from "../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { chatRow, client } from "./support/client.js"
import { type NatsServer, startNatsServer } from "./support/natsServer.js"
import { BOOTSTRAP_KEY, type CatalogEntry, type Sluice, startSluice } from "./support/sluice.js"
import { waitFor } from "./support/waitFor.js"

/*
 * Two Sluice processes on one nats-server. An account's `concurrency` holds over its batch rows and
 * its interactive requests through both instances together: the account has a simulator to itself,
 * so the simulator's own count of requests in flight is the account's, whichever instance sent them.
 * And a model's batch rows give way to interactive requests that arrive at the other instance.
 */
const CONCURRENCY = 3
const INSTANCES = 2
const ROWS_PER_BATCH = 16
const MODEL = "shared-model"
const AFTER_MODEL = "after-restart-model"
const LAPSE_MODEL = "lapse-model"
const WAY_MODEL = "way-model"
const WAY_SLOTS = 4

describe("an account's concurrent-request slots hold over several instances", () => {
  let nats: NatsServer
  let sim: Simulator
  let afterSim: Simulator
  let lapseSim: Simulator
  let waySim: Simulator
  let models: ReadonlyArray<CatalogEntry>
  const sluices: Array<Sluice> = []

  beforeAll(async () => {
    nats = await startNatsServer()
    sim = await startSimulator({ models: [MODEL], latencyMs: 120 })
    afterSim = await startSimulator({ models: [AFTER_MODEL], latencyMs: 120 })
    lapseSim = await startSimulator({ models: [LAPSE_MODEL] })
    waySim = await startSimulator({ models: [WAY_MODEL] })
    // The shared models' own slots are wider than the account's, on each instance: only the account's bind there.
    models = [
      { id: MODEL, upstream_url: sim.url, batch_concurrency: 8 },
      { id: LAPSE_MODEL, upstream_url: lapseSim.url, batch_concurrency: 8, timeout_ms: 600_000 },
      { id: AFTER_MODEL, upstream_url: afterSim.url, batch_concurrency: 8 },
      { id: WAY_MODEL, upstream_url: waySim.url, batch_concurrency: WAY_SLOTS, timeout_ms: 60_000 },
    ]
    for (let i = 0; i < INSTANCES; i++) {
      sluices.push(await startSluice({ natsUrl: nats.url, models, env: { SLUICE_INSTANCE_ID: `shared-${i}` } }))
    }
  }, 120_000)
  afterAll(async () => {
    for (const s of sluices) {
      await s.stop()
      s.cleanup()
    }
    await sim?.close()
    await afterSim?.close()
    await lapseSim?.close()
    await waySim?.close()
    await nats?.stop()
  })

  /**
   * A fresh account with `concurrency` CONCURRENCY sends a batch through each instance and keeps two
   * interactive requests going through each until both batches are final, all on `model`, whose
   * simulator only this account uses; answers the simulator's count of requests in flight at most.
   */
  /** A new account with `concurrency` CONCURRENCY: its key, once every instance in `on` knows it. */
  const limitedAccount = async (on: ReadonlyArray<Sluice> = sluices) => {
    const admin = client(sluices[0]!.url)
    const account = `acct-${Math.random().toString(36).slice(2, 10)}`
    expect((await admin.admin("POST", "/admin/v1/accounts", { id: account, tier: "internal", concurrency: CONCURRENCY })).status).toBe(200)
    const key = await admin.admin("POST", `/admin/v1/accounts/${account}/keys`, { expires_at: null })
    expect(key.status).toBe(200)
    const apis = on.map((s) => client(s.url, key.body.key as string))
    for (const api of apis) {
      await waitFor("the key reaches every instance", async () => (await api.call("GET", "/v1/batches")).status === 200)
    }
    return apis
  }

  /**
   * `logMayBlink`: just after a restart of nats-server an instance may find its log away a moment after
   * it first answered ready (a consumer it is recreating times out); an interactive request is then
   * refused 503 with Retry-After, which a client retries, as the contract says.
   */
  const shareOneAccount = async (model: string, upstream: Simulator, logMayBlink = false) => {
    const apis = await limitedAccount()

    const batches = await Promise.all(
      apis.map(async (api, i) => {
        const requests = Array.from({ length: ROWS_PER_BATCH }, (_, row) => chatRow(`i${i}-r${row}`, `instance ${i} row ${row}`, model))
        const created = await api.call("POST", "/v1/batches", { requests })
        expect(created.status, created.text).toBe(200)
        return created.body.id as string
      }),
    )

    let batchesDone = false
    const answered = apis.map(() => new Map<number, number>())
    const interactive = apis.flatMap((api, i) =>
      [0, 1].map(async (lane) => {
        // A running batch may hold every slot of the account (the seed: "a running batch leaves fewer for
        // your interactive work"), so an instance's lanes go on until it has served one, batches done or not.
        for (let n = 0; !batchesDone || !(answered[i]!.get(200) ?? 0); n++) {
          const answer = await api.call("POST", "/v1/chat/completions", {
            model,
            messages: [{ role: "user", content: `interactive ${i}.${lane}.${n}` }],
          })
          if (answer.status === 503 && logMayBlink) {
            expect(answer.headers.get("retry-after"), answer.text).not.toBeNull()
            expect(answer.text).toMatch(/event log/)
            await new Promise((r) => setTimeout(r, 200))
            continue
          }
          answered[i]!.set(answer.status, (answered[i]!.get(answer.status) ?? 0) + 1)
          if (answer.status === 429) await new Promise((r) => setTimeout(r, 30))
        }
      }),
    )

    const finals = await Promise.all(batches.map((id, i) => apis[i]!.waitFinal(id, 120_000)))
    batchesDone = true
    await Promise.all(interactive)

    for (const batch of finals) {
      expect(batch.status).toBe("completed")
      expect(batch.request_counts).toEqual({ total: ROWS_PER_BATCH, completed: ROWS_PER_BATCH, failed: 0 })
    }
    for (const [i, statuses] of answered.entries()) {
      // Every interactive request was answered by the model or refused for the account's slots, on each instance.
      expect([...statuses.keys()].every((s) => s === 200 || s === 429), `instance ${i}: ${JSON.stringify([...statuses])}`).toBe(true)
      expect(statuses.get(200) ?? 0, `instance ${i} served interactive requests`).toBeGreaterThan(0)
    }
    const stats = upstream.stats()
    expect(stats.received).toBeGreaterThanOrEqual(INSTANCES * ROWS_PER_BATCH)
    return stats.maxInFlight
  }

  it(`batch rows and interactive requests through ${INSTANCES} instances keep the account within concurrency + (instances - 1) * ${UNACKED_GROWTH}`, async () => {
    const most = await shareOneAccount(MODEL, sim)
    expect(most).toBeLessThanOrEqual(CONCURRENCY + (INSTANCES - 1) * UNACKED_GROWTH)
    // The account did use its slots: the bound was not met by running less.
    expect(most).toBeGreaterThanOrEqual(CONCURRENCY)
  }, 180_000)

  it("after a restart of nats-server the instances share the account's slots again", async () => {
    await nats.restart()
    for (const s of sluices) {
      await waitFor("every instance is ready again", async () => (await fetch(`${s.url}/readyz`).catch(() => undefined))?.status === 200, { timeoutMs: 60_000 })
    }
    const most = await shareOneAccount(AFTER_MODEL, afterSim, true)
    expect(most).toBeLessThanOrEqual(CONCURRENCY + (INSTANCES - 1) * UNACKED_GROWTH)
    expect(most).toBeGreaterThanOrEqual(CONCURRENCY)
  }, 180_000)

  it("a killed instance's requests stop counting for the others once its reports lapse", async () => {
    const doomed = await startSluice({ natsUrl: nats.url, models, env: { SLUICE_INSTANCE_ID: "doomed" } })
    try {
      const [survivor, victim] = await limitedAccount([sluices[0]!, doomed])
      // The doomed instance holds every slot of the account with interactive requests that never end
      // (its batch rows would run on whichever instance holds the model's lease). It takes one slot
      // beyond what the others have acknowledged of it at a time, so a request it answers 429 is sent again.
      let killed = false
      const hold = (i: number): Promise<unknown> =>
        victim!
          .call("POST", "/v1/chat/completions", { model: LAPSE_MODEL, messages: [{ role: "user", content: `hang ${i} ${simDirective.hang}` }] })
          .then((answer) => (answer.status === 429 && !killed ? new Promise((r) => setTimeout(r, 100)).then(() => hold(i)) : undefined))
          .catch(() => undefined)
      for (let i = 0; i < CONCURRENCY; i++) void hold(i)
      await waitFor("the doomed instance's requests are at the simulator", () => lapseSim.stats().inFlight === CONCURRENCY)
      const rows = Array.from({ length: 4 }, (_, row) => chatRow(`s${row}`, `survivor ${row}`, LAPSE_MODEL))
      const created = await survivor!.call("POST", "/v1/batches", { requests: rows })
      expect(created.status, created.text).toBe(200)
      killed = true
      await doomed.stop("SIGKILL")
      // Its connections closed with it; its last report says the account is full until it lapses.
      const final = await survivor!.waitFinal(created.body.id, 60_000)
      expect(final.request_counts).toEqual({ total: 4, completed: 4, failed: 0 })
      const alive = INSTANCES + 1
      expect(lapseSim.stats().maxInFlight).toBeLessThanOrEqual(CONCURRENCY + (alive - 1) * UNACKED_GROWTH)
    } finally {
      await doomed.stop("SIGKILL")
      doomed.cleanup()
    }
  }, 120_000)

  it("a model's batch rows give way to interactive requests in flight on the other instance", async () => {
    const operator = sluices.map((s) => client(s.url))
    const rows = Array.from({ length: 400 }, (_, i) => chatRow(`w${i}`, `way ${i} ${simDirective.latency(200)}`, WAY_MODEL))
    const created = await operator[0]!.call("POST", "/v1/batches", { requests: rows })
    expect(created.status, created.text).toBe(200)
    const hungBefore = waySim.stats().hung
    const batchAtSim = () => waySim.stats().inFlight - (waySim.stats().hung - hungBefore)
    await waitFor(`${WAY_SLOTS} batch rows run`, () => batchAtSim() === WAY_SLOTS)
    // The interactive requests go to an instance that runs none of the model's rows.
    const running = await Promise.all(
      operator.map(async (api) => (await api.admin("GET", "/admin/v1/models")).body.data.find((m: { id: string }) => m.id === WAY_MODEL).running as number),
    )
    const other = sluices[running.findIndex((n) => n === 0)]!
    const k = 3
    const held = Array.from({ length: k }, (_, i) => {
      const controller = new AbortController()
      fetch(`${other.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${BOOTSTRAP_KEY}` },
        body: JSON.stringify({ model: WAY_MODEL, messages: [{ role: "user", content: `interactive ${i} ${simDirective.hang}` }] }),
        signal: controller.signal,
      }).catch(() => undefined)
      return controller
    })
    await waitFor(`${k} interactive requests are at the simulator`, () => waySim.stats().hung - hungBefore === k)
    await waitFor(`batch rows drop to ${WAY_SLOTS - k}`, () => batchAtSim() === WAY_SLOTS - k)
    const completed = waySim.stats().answered[200] ?? 0
    let most = 0
    await waitFor("four more rows complete", () => {
      most = Math.max(most, batchAtSim())
      return (waySim.stats().answered[200] ?? 0) >= completed + 4
    })
    expect(most).toBe(WAY_SLOTS - k)
    for (const controller of held) controller.abort()
    // Let go, the hung requests leave the simulator: all it has in flight are batch rows again.
    await waitFor(`${WAY_SLOTS} batch rows run again`, () => waySim.stats().inFlight === WAY_SLOTS)
    await operator[0]!.call("POST", `/v1/batches/${created.body.id}/cancel`)
    await operator[0]!.waitFinal(created.body.id)
  }, 120_000)
})
