import { connect as natsConnect } from "@nats-io/transport-node"
import Database from "better-sqlite3"
import { join } from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { chatRow, client } from "../support/client.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"
import { BOOTSTRAP_KEY, type CatalogEntry, type Sluice, startSluice } from "../support/sluice.js"

/*
 * `Idempotency-Key` on POST /v1/batches: the key's records are in the log, so a retry is answered the
 * first batch again after a kill -9 and from another instance. Sluice runs as a process, the
 * simulator as a real server; rows park on a long 429 so nothing but the creates happens.
 */
const MODEL = "parking"
const parked = (id: string) => chatRow(id, `parked ${id} ${simDirective.status(429)}`, MODEL)
const batchOf = (n: number, prefix = "r") => ({ requests: Array.from({ length: n }, (_, i) => parked(`${prefix}-${i}`)) })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Sees a batch_created stored in the log, straight from its store: the embedded file, or a NATS subscription. */
const watchCreated = async (where: { dataDir: string; natsUrl?: string }) => {
  if (where.natsUrl !== undefined) {
    const nc = await natsConnect({ servers: where.natsUrl })
    let seen = 0
    const sub = nc.subscribe("batch.*.batch_created", { callback: () => void seen++ })
    await nc.flush()
    return { count: () => Promise.resolve(seen), close: async () => (sub.unsubscribe(), await nc.close()) }
  }
  const count = async () => {
    const db = new Database(join(where.dataDir, "log.sqlite"), { readonly: true, fileMustExist: true })
    try {
      return (db.prepare("SELECT count(*) AS n FROM messages WHERE subject LIKE 'batch.%.batch_created'").get() as { n: number }).n
    } finally {
      db.close()
    }
  }
  return { count, close: async () => undefined }
}

describe.each(["embedded", "nats"] as const)("idempotent create on the %s event log", (backend) => {
  let sim: Simulator
  let nats: NatsServer | undefined
  let sluice: Sluice | undefined
  const owned: Array<Sluice> = []
  const models = (): ReadonlyArray<CatalogEntry> => [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 2, timeout_ms: 600_000 }]
  const start = async (dataDir?: string) => {
    const started = await startSluice({
      models: models(),
      ...(nats === undefined ? {} : { natsUrl: nats.url }),
      ...(dataDir === undefined ? {} : { dataDir }),
      env: { SLUICE_MAX_UNFINISHED_BATCHES: "100" },
    })
    if (dataDir === undefined) owned.push(started)
    return started
  }
  const api = (s: Sluice = sluice!) => client(s.url)
  const create = (body: unknown, key?: string, s?: Sluice) =>
    api(s).call("POST", "/v1/batches", body, {
      authorization: `Bearer ${BOOTSTRAP_KEY}`,
      ...(key === undefined ? {} : { "idempotency-key": key }),
    })
  const batchIds = async (s?: Sluice) => {
    const list = await api(s).call("GET", "/v1/batches?limit=100")
    return (list.body.data as Array<{ id: string }>).map((b) => b.id)
  }

  beforeAll(async () => {
    sim = await startSimulator({ models: [MODEL], faults: { retryAfterSeconds: 40 * 86_400 } })
    if (backend === "nats") nats = await startNatsServer()
  })
  afterEach(async () => {
    await sluice?.stop("SIGKILL")
    sluice = undefined
  })
  afterAll(async () => {
    for (const s of owned) s.cleanup()
    await nats?.stop()
    await sim?.close()
  })

  it("answers the same key with the same body the original batch, marked replayed, and creates nothing", async () => {
    sluice = await start()
    const first = await create(batchOf(3), "key-same")
    expect(first.status, first.text).toBe(200)
    expect(first.headers.get("idempotent-replayed")).toBeNull()
    const before = await batchIds()
    const again = await create(batchOf(3), "key-same")
    expect(again.status, again.text).toBe(200)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.body.id).toBe(first.body.id)
    expect(await batchIds()).toEqual(before)
    // Another key, or none, is another batch.
    const other = await create(batchOf(3), "key-other")
    expect(other.body.id).not.toBe(first.body.id)
    expect(other.headers.get("idempotent-replayed")).toBeNull()
  })

  it("refuses the same key with another body with 422, a malformed key with 400, and stores nothing for either", async () => {
    sluice = await start()
    const first = await create(batchOf(2), "key-body")
    expect(first.status).toBe(200)
    const before = await batchIds()
    const differs = await create(batchOf(3), "key-body")
    expect(differs.status, differs.text).toBe(422)
    expect(differs.body.error).toMatchObject({ type: "invalid_request_error", param: "Idempotency-Key" })
    expect(differs.body.error.message).toContain("different request body")
    for (const bad of ["", "two words", "x".repeat(256)]) {
      const refused = await create(batchOf(2), bad)
      expect(refused.status, `${JSON.stringify(bad)}: ${refused.text}`).toBe(400)
      expect(refused.body.error.param).toBe("Idempotency-Key")
    }
    // An invalid body under a fresh key is the create's own 400, and burns no key.
    const invalid = await create({ requests: [] }, "key-invalid")
    expect(invalid.status).toBe(400)
    expect(await batchIds()).toEqual(before)
    const valid = await create(batchOf(2), "key-invalid")
    expect(valid.status, valid.text).toBe(200)
    expect(valid.headers.get("idempotent-replayed")).toBeNull()
  })

  it("stores one batch for two creates raced with one key from two connections", async () => {
    sluice = await start()
    const before = await batchIds()
    const body = batchOf(3_000, "race")
    const [a, b] = await Promise.all([create(body, "key-race"), create(body, "key-race")])
    const answers = [a, b].sort((x, y) => x.status - y.status)
    const created = answers.filter((x) => x.status === 200 && x.headers.get("idempotent-replayed") === null)
    expect(created, answers.map((x) => `${x.status} ${x.text.slice(0, 200)}`).join("\n")).toHaveLength(1)
    const other = answers.find((x) => x !== created[0])!
    // The loser either saw the claim while the batch was being stored, or the stored batch.
    if (other.status === 409) {
      expect(other.headers.get("retry-after")).not.toBeNull()
      expect(other.body.error.message).toContain("still being stored")
    } else {
      expect(other.status).toBe(200)
      expect(other.headers.get("idempotent-replayed")).toBe("true")
      expect(other.body.id).toBe(created[0]!.body.id)
    }
    const after = await batchIds()
    expect(after.filter((id) => !before.includes(id))).toEqual([created[0]!.body.id])
    const retry = await create(body, "key-race")
    expect(retry.headers.get("idempotent-replayed")).toBe("true")
    expect(retry.body.id).toBe(created[0]!.body.id)
  })

  it("answers a retry after a kill -9 between the store and the answer with the stored batch", async () => {
    sluice = await start()
    const dataDir = sluice.dataDir
    const body = batchOf(20_000, "killed")
    let key: string | undefined
    // The kill must land after the batch is in the log and before its answer: tried until one does.
    for (let attempt = 1; attempt <= 6 && key === undefined; attempt++) {
      const candidate = `key-kill-${attempt}`
      const watch = await watchCreated({ dataDir, ...(nats === undefined ? {} : { natsUrl: nats.url }) })
      const seenBefore = await watch.count()
      let answered = false
      const sent = create(body, candidate).then(
        () => void (answered = true),
        () => undefined,
      )
      while ((await watch.count()) === seenBefore && !answered) await sleep(1)
      await sluice.stop("SIGKILL")
      await sent
      await watch.close()
      if (!answered) key = candidate
      sluice = await start(dataDir)
    }
    expect(key, "no kill landed between the store and the answer in 6 tries").toBeDefined()
    const before = await batchIds()
    const retry = await create(body, key)
    expect(retry.status, retry.text).toBe(200)
    expect(retry.headers.get("idempotent-replayed")).toBe("true")
    expect(before).toContain(retry.body.id)
    expect(retry.body.request_counts.total).toBe(20_000)
    expect(await batchIds()).toEqual(before)
  }, 240_000)

  // Several instances share a NATS log only; the embedded log belongs to one process.
  if (backend === "nats") it("answers a key claimed on one instance from another instance on the same log", async () => {
    sluice = await start()
    const second = await start()
    try {
      const first = await create(batchOf(2, "inst"), "key-instances")
      expect(first.status, first.text).toBe(200)
      const elsewhere = await create(batchOf(2, "inst"), "key-instances", second)
      expect(elsewhere.status, elsewhere.text).toBe(200)
      expect(elsewhere.headers.get("idempotent-replayed")).toBe("true")
      expect(elsewhere.body.id).toBe(first.body.id)
      const differs = await create(batchOf(1, "inst"), "key-instances", second)
      expect(differs.status).toBe(422)
    } finally {
      await second.stop("SIGKILL")
    }
  })
})
