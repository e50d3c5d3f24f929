import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { chatRow, client } from "./support/client.js"
import { type NatsServer, startNatsServer } from "./support/natsServer.js"
import { type CatalogEntry, type Sluice, startSluice } from "./support/sluice.js"
import { waitFor } from "./support/waitFor.js"
import { freshAccount, sameOnEvery, waitingGauge } from "./support/waitingOn.js"

/*
 * The two reasons no owner can publish: its model's lease lapsing (the owner is paused with SIGSTOP,
 * so its lease is not renewed) and the event log going away (nats-server paused). One instance runs
 * the models; two others only answer (SLUICE_RUN_MODELS=false), and read the lapse alike.
 */
const MODEL = "handover-model"
const TTL_MS = 3_000

describe("waiting_on through a lapsed lease and a log away", () => {
  let nats: NatsServer
  let sim: Simulator
  let owner: Sluice
  const readers: Array<Sluice> = []

  beforeAll(async () => {
    nats = await startNatsServer()
    sim = await startSimulator({ models: [MODEL] })
    const models: ReadonlyArray<CatalogEntry> = [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 1, timeout_ms: 300_000 }]
    const env = { SLUICE_LEASE_TTL_MS: String(TTL_MS) }
    owner = await startSluice({ natsUrl: nats.url, models, env: { ...env, SLUICE_INSTANCE_ID: "owner" } })
    for (const name of ["reader-1", "reader-2"]) {
      readers.push(await startSluice({ natsUrl: nats.url, models, env: { ...env, SLUICE_INSTANCE_ID: name, SLUICE_RUN_MODELS: "false" } }))
    }
    await waitFor("the owner to hold the lease", async () => (await client(readers[0]!.url).admin("GET", "/admin/v1/leases")).body?.data?.[0]?.owner === "owner")
  }, 120_000)

  afterAll(async () => {
    owner?.signal("SIGCONT")
    await nats?.freeze(false)
    for (const s of [...readers, owner]) {
      await s?.stop("SIGKILL")
      s?.cleanup()
    }
    await sim?.close()
    await nats?.stop()
  })

  it("lease_handover: the owner stops renewing; both other instances say so with the same since, and not once it is back", async () => {
    const urls = [owner.url, ...readers.map((r) => r.url)]
    const { apis } = await freshAccount([client(owner.url)], {}, urls, client)
    const created = await apis[0]!.call("POST", "/v1/batches", {
      requests: [chatRow("long", `long ${simDirective.latency(120_000)}`, MODEL), chatRow("next", "next", MODEL)],
    })
    expect(created.status).toBe(200)
    const id = created.body.id as string
    const reads = (on: ReadonlyArray<ReturnType<typeof client>>) => on.map((api) => async () => (await api.call("GET", `/v1/batches/${id}`)).body?.waiting_on)
    await sameOnEvery("the batch behind its long row", reads(apis), null)

    const paused = Date.now()
    owner.signal("SIGSTOP")
    const waiting = await sameOnEvery("the batch of a model whose owner stopped", reads(apis.slice(1)), "lease_handover")
    expect(waiting).toMatchObject({ model: MODEL, detail: expect.stringContaining("no live owner") })
    // Since its last renewal, which came before the pause.
    expect(waiting.since).toBeLessThanOrEqual(Math.floor(paused / 1000))
    expect(waiting.since).toBeGreaterThanOrEqual(Math.floor((paused - TTL_MS) / 1000) - 1)
    for (const reader of readers) {
      await waitFor("the gauge to count it", async () => ((await waitingGauge(reader.url)).lease_handover ?? 0) === 1)
    }

    owner.signal("SIGCONT")
    await waitFor("the lease to be held again", async () =>
      (await Promise.all(reads(apis).map((read) => read()))).every((w) => w !== undefined && w?.reason !== "lease_handover"),
    )
  })

  it("log_unavailable: with nats-server paused, every instance's admin view and gauge say the batch waits on the log", async () => {
    const urls = [owner.url, ...readers.map((r) => r.url)]
    const { apis } = await freshAccount([client(owner.url)], {}, urls, client)
    const created = await apis[0]!.call("POST", "/v1/batches", { requests: [chatRow("a", `a ${simDirective.latency(120_000)}`, MODEL), chatRow("b", "b", MODEL)] })
    expect(created.status).toBe(200)
    const id = created.body.id as string
    await nats.freeze(true)
    // Each instance finds the log away by its own probe: the reason and the batch agree, `since` is each one's.
    for (const url of urls) {
      await waitFor(`${url} to say the batch waits on the log`, async () => {
        const got = await client(url).admin("GET", `/admin/v1/batches/${id}`)
        return got.body?.waiting_on?.reason === "log_unavailable" && /event log cannot be reached/.test(got.body.waiting_on.detail)
      })
      expect((await waitingGauge(url)).log_unavailable).toBeGreaterThanOrEqual(1)
    }
    await nats.freeze(false)
    for (const url of urls) {
      await waitFor(`${url} to see the log back`, async () => (await client(url).admin("GET", `/admin/v1/batches/${id}`)).body?.waiting_on?.reason !== "log_unavailable")
    }
  })
})
