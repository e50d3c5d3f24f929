import { connect, type Socket } from "node:net"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { heldCalls } from "../src/domain/scheduling/batchSlots.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { chatRow, client } from "./support/client.js"
import { type NatsServer, startNatsServer } from "./support/natsServer.js"
import { BOOTSTRAP_KEY, type CatalogEntry, type Sluice, startSluice } from "./support/sluice.js"
import { type StoredEvent, storedEvents, settlesWithoutStart, terminalsPerRow } from "./support/storedEvents.js"
import { waitFor } from "./support/waitFor.js"

/*
 * Nothing lost: a kill -9, a SIGTERM, a NATS restart or a cancel across a restart neither loses
 * nor duplicates a row's result, and leaves no batch stuck. Real processes over loopback; the log
 * is read straight from its store after the service has stopped.
 */

const MODEL = "glm-5.3-flash"
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Sends a create request's headers and the start of its body, then waits: the request stays in progress. */
const holdRequestOpen = async (port: number): Promise<Socket> => {
  const socket = connect(port, "127.0.0.1")
  await new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject))
  socket.write(
    `POST /v1/batches HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${BOOTSTRAP_KEY}\r\n` +
      `content-type: application/json\r\ncontent-length: 1000\r\n\r\n{"requests":`,
  )
  return socket
}

const rows = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => chatRow(`${prefix}-${i}`, `${prefix} row ${i}`))

describe.each(["embedded", "nats"] as const)("recovery on the %s event log", (backend) => {
  let nats: NatsServer | undefined
  let sim: Simulator | undefined
  let sluice: Sluice | undefined
  // Services started on a fresh data directory, which they own.
  const owners: Array<Sluice> = []

  // A NATS server per test: a service started on a shared stream would resume the other tests' batches.
  beforeEach(async () => {
    if (backend === "nats") nats = await startNatsServer()
  })
  afterEach(async () => {
    await sluice?.stop("SIGKILL")
    sluice = undefined
    for (const s of owners.splice(0)) s.cleanup()
    await sim?.close()
    sim = undefined
    await nats?.stop()
    nats = undefined
  })

  const start = async (models: ReadonlyArray<CatalogEntry>, dataDir?: string) => {
    sluice = await startSluice({
      models,
      ...(nats === undefined ? {} : { natsUrl: nats.url }),
      ...(dataDir === undefined ? {} : { dataDir }),
    })
    if (dataDir === undefined) owners.push(sluice)
    return sluice
  }
  const api = () => client(sluice!.url)
  const create = async (requests: ReadonlyArray<unknown>) => {
    const created = await api().call("POST", "/v1/batches", { requests })
    expect(created.status).toBe(200)
    return created.body.id as string
  }
  const batch = async (id: string) => (await api().call("GET", `/v1/batches/${id}`)).body
  const events = (dataDir: string, batchId: string) => storedEvents({ dataDir, natsUrl: nats?.url }, batchId)
  const rowStarts = (log: ReadonlyArray<StoredEvent>) => log.filter((e) => e.type === "row_started")

  /** Every row completed once, with its own answer, in submission order, in the API and in the log. */
  const expectEachRowCompletedOnce = async (batchId: string, prefix: string, total: number) => {
    const final = await api().waitFinal(batchId, 30_000)
    expect(final.status).toBe("completed")
    expect(final.request_counts).toEqual({ total, completed: total, failed: 0 })
    const results = await api().allResults(batchId)
    expect(results.map((r) => r.custom_id)).toEqual(rows(prefix, total).map((r) => r.custom_id))
    for (const [i, r] of results.entries()) {
      expect(r.status).toBe("completed")
      expect(r.error).toBeNull()
      expect(r.response.status_code).toBe(200)
      expect(r.response.body.choices[0].message.content).toContain(`${prefix} row ${i}`)
    }
  }
  const expectOneCompletionEventPerRow = (log: ReadonlyArray<StoredEvent>, total: number) => {
    expect(terminalsPerRow(log, total)).toEqual(Array.from({ length: total }, () => 1))
    expect(settlesWithoutStart(log)).toEqual([])
    expect(log.filter((e) => e.type === "row_completed")).toHaveLength(total)
  }

  it("a kill -9 at two moments mid-batch, with two batches in flight, loses and duplicates no row", async () => {
    sim = await startSimulator({ latencyMs: 20, jitterMs: 30, seed: 7 })
    const models = [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 8 }]
    const first = await start(models)
    const a = await create(rows("a", 240))
    const b = await create(rows("b", 80))
    const done = async () => {
      const [x, y] = await Promise.all([batch(a), batch(b)])
      return x.request_counts.completed + y.request_counts.completed
    }
    for (const killAt of [30, 160]) {
      await waitFor(`${killAt} rows have completed`, async () => (await done()) >= killAt)
      expect(await sluice!.stop("SIGKILL")).toBe("SIGKILL")
      await start(models, first.dataDir)
    }
    await expectEachRowCompletedOnce(a, "a", 240)
    await expectEachRowCompletedOnce(b, "b", 80)
    expect(await sluice!.stop("SIGTERM")).toBe(0)

    const logA = await events(first.dataDir, a)
    const logB = await events(first.dataDir, b)
    expectOneCompletionEventPerRow(logA, 240)
    expectOneCompletionEventPerRow(logB, 80)
    // The kills did catch rows running: their lost attempts ran again.
    expect([...logA, ...logB].some((e) => e.type === "row_started" && e.attempt! > 1)).toBe(true)
    for (const log of [logA, logB]) expect(log.filter((e) => e.type === "batch_completed")).toHaveLength(1)
  })

  it("a kill -9 while started rows wait in the upstream thread for a slot loses and duplicates none of them", async () => {
    sim = await startSimulator({ latencyMs: 1_500 })
    const slots = 16
    const held = heldCalls(slots)
    const models = [{ id: MODEL, upstream_url: sim.url, batch_concurrency: slots }]
    const first = await start(models)
    const id = await create(rows("h", 40))
    const running = async () => (await api().allResults(id)).filter((r) => r.status === "running").length
    await waitFor(`${slots} rows at the model and ${held} more started`, async () => sim!.stats().inFlight === slots && (await running()) === slots + held)
    // The held rows' starts are stored, but their requests were never sent.
    expect(sim.stats().received).toBe(slots)
    expect(await sluice!.stop("SIGKILL")).toBe("SIGKILL")

    await start(models, first.dataDir)
    await expectEachRowCompletedOnce(id, "h", 40)
    expect(await sluice!.stop("SIGTERM")).toBe(0)
    const log = await events(first.dataDir, id)
    expectOneCompletionEventPerRow(log, 40)
    // Every row that had started ran again after the restart, the held ones included, and only once more.
    expect(rowStarts(log).filter((e) => e.attempt === 2)).toHaveLength(slots + held)
    expect(sim.stats().received).toBe(slots + 40)
  })

  it("on SIGTERM it starts no new row, even while a client holds a request open, lets the running rows finish, exits 0, and finishes the batch after a restart", async () => {
    sim = await startSimulator({ latencyMs: 400 })
    const models = [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 4 }]
    const first = await start(models)
    const id = await create(rows("t", 12))
    await waitFor("four rows are running upstream", () => sim!.stats().inFlight === 4)
    // A client halfway through an upload keeps the HTTP server from closing.
    const upload = await holdRequestOpen(first.port)
    const requestsAtSignal = sim.stats().received
    const exited = sluice!.stop("SIGTERM")
    await waitFor("the running rows are answered", () => sim!.stats().answered[200] === 4)
    // Their slots are free now: a worker still taking rows would call the upstream at once.
    await sleep(300)
    expect(sim.stats().received).toBe(requestsAtSignal)
    upload.destroy()
    expect(await exited).toBe(0)
    expect(sim.stats().received).toBe(requestsAtSignal)

    const stopped = await events(first.dataDir, id)
    const byRow = (a: StoredEvent, b: StoredEvent) => a.row! - b.row!
    const started = rowStarts(stopped).sort(byRow).map((e) => e.row)
    expect(started).toHaveLength(4)
    expect(stopped.filter((e) => e.type === "row_completed").sort(byRow).map((e) => e.row)).toEqual(started)

    await start(models, first.dataDir)
    await expectEachRowCompletedOnce(id, "t", 12)
    expect(await sluice!.stop("SIGTERM")).toBe(0)
    const log = await events(first.dataDir, id)
    expectOneCompletionEventPerRow(log, 12)
    // The rows that finished during the shutdown were not run again.
    expect(rowStarts(log)).toHaveLength(12)
    expect(sim.stats().received).toBe(12)
  })

  // Declared only where it applies, so no run lists it as skipped.
  if (backend === "nats") it(
    "a NATS restart mid-batch loses and duplicates no row, and batches created after it run",
    async () => {
      sim = await startSimulator({ latencyMs: 20, jitterMs: 20, seed: 11 })
      const models = [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 8 }]
      const first = await start(models)
      const id = await create(rows("n", 200))
      await waitFor("40 rows have completed", async () => (await batch(id)).request_counts.completed >= 40)
      const requestsBeforeRestart = sim.stats().received
      await nats!.restart()
      expect(requestsBeforeRestart).toBeLessThan(200)
      await expectEachRowCompletedOnce(id, "n", 200)
      const after = await create(rows("m", 20))
      await expectEachRowCompletedOnce(after, "m", 20)
      expect(await sluice!.stop("SIGTERM")).toBe(0)
      expectOneCompletionEventPerRow(await events(first.dataDir, id), 200)
      expectOneCompletionEventPerRow(await events(first.dataDir, after), 20)
    },
  )

  it("a batch cancelled with rows running, then killed -9, ends cancelled after a restart without retrying them", async () => {
    sim = await startSimulator({ latencyMs: 10_000 })
    const models = [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 3 }]
    const first = await start(models)
    const id = await create(rows("c", 10))
    await waitFor("three rows are running upstream", () => sim!.stats().inFlight === 3)
    const cancelling = await api().call("POST", `/v1/batches/${id}/cancel`)
    expect(cancelling.body.status).toBe("cancelling")
    expect(await sluice!.stop("SIGKILL")).toBe("SIGKILL")

    await start(models, first.dataDir)
    const final = await api().waitFinal(id, 20_000)
    expect(final.status).toBe("cancelled")
    expect(final.request_counts).toEqual({ total: 10, completed: 0, failed: 0 })
    const results = await api().allResults(id)
    expect(results.map((r) => r.custom_id)).toEqual(rows("c", 10).map((r) => r.custom_id))
    expect(results.every((r) => r.status === "cancelled" && r.response === null)).toBe(true)
    expect(await sluice!.stop("SIGTERM")).toBe(0)
    expect(sim.stats().received).toBe(3)

    const log = await events(first.dataDir, id)
    const interrupted = rowStarts(log).map((e) => e.row!)
    expect(interrupted).toHaveLength(3)
    // The interrupted rows end with one row_cancelled each; the idle ones were settled by batch_cancelling.
    expect(terminalsPerRow(log, 10)).toEqual(Array.from({ length: 10 }, (_, row) => (interrupted.includes(row) ? 1 : 0)))
    expect(settlesWithoutStart(log)).toEqual([])
    expect(log.filter((e) => e.type === "row_cancelled")).toHaveLength(3)
    expect(log.filter((e) => e.type === "batch_cancelled")).toHaveLength(1)
  })
})
