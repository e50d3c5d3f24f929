import { afterEach, describe, expect, it } from "vitest"
import { simDirective } from "../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { chatRow, client } from "./support/client.js"
import { type NatsServer, startNatsServer } from "./support/natsServer.js"
import { type Sluice, startSluice, type TestClockControls } from "./support/sluice.js"
import { storedEvents, settlesWithoutStart, terminalsPerRow } from "./support/storedEvents.js"
import { waitFor } from "./support/waitFor.js"

/*
 * Nothing lost while the log is unavailable: a row that comes up while NATS cannot answer waits for
 * it instead of leaving the model's queue (which left its batch unfinished for good). nats-server is
 * suspended (SIGSTOP), so its connections stay open and nothing is answered: publishes and stream
 * info requests time out after 5 s. The actors run on a TestClock, which the test moves on.
 */

const MODEL = "glm-5.3-flash"
describe("a hung event log", () => {
  let nats: NatsServer | undefined
  let sim: Simulator | undefined
  let sluice: (Sluice & TestClockControls) | undefined

  afterEach(async () => {
    await nats?.freeze(false)
    await sluice?.stop("SIGKILL")
    sluice?.cleanup()
    sluice = undefined
    await sim?.close()
    sim = undefined
    await nats?.stop()
    nats = undefined
  })

  /** nats-server, the simulator and Sluice on a TestClock with this lease TTL, and a batch of `rows` created. */
  const startWith = async (leaseTtlMs: number, rows: ReadonlyArray<object>) => {
    nats = await startNatsServer()
    sim = await startSimulator()
    sluice = await startSluice({
      natsUrl: nats.url,
      models: [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 2, timeout_ms: 600_000 }],
      testClock: {},
      env: { SLUICE_LEASE_TTL_MS: String(leaseTtlMs) },
    })
    const api = client(sluice.url)
    const created = await api.call("POST", "/v1/batches", { requests: rows })
    expect(created.status).toBe(200)
    return { api, id: created.body.id as string }
  }

  /** Row a has failed once and waits for its retry, while row b's call is at the model. */
  const retryWaitsWhileAnotherRuns = (api: ReturnType<typeof client>, id: string) =>
    waitFor("a to wait for its retry and b to run", async () => {
      const results = await api.allResults(id)
      const [a, b] = [results.find((r) => r.custom_id === "a"), results.find((r) => r.custom_id === "b")]
      return a?.status === "queued" && a.error !== null && b?.status === "running"
    })

  it("a row whose retry comes due while the writer must reload its batch from the hung log waits for the log, and the batch completes", async () => {
    // The model's lease (on the wall clock) outlives the freeze: its owner keeps the model, so a's
    // retry has to wait for the writer's reload rather than for a new owner.
    const { api, id } = await startWith(120_000, [chatRow("a", `first ${simDirective.fail(1, 500)}`), chatRow("b", `second ${simDirective.latency(1_500)}`)])
    if (nats === undefined || sluice === undefined) throw new Error("not started")
    // a failed once and waits for its retry (on the TestClock); b's start is stored and its call is at the model.
    await retryWaitsWhileAnotherRuns(api, id)
    await nats.freeze(true)
    // b's result cannot be stored: its append times out, and the writer drops the batch's state.
    await waitFor("b's result to wait for the log", () => /row 1 of batch_\w+ waits for the event log: /.test(sluice!.output()))
    // a's retry comes due: starting it needs the batch's state, which only the log can give back.
    await sluice.adjust(60_000)
    // Its start's decision fails as the log's stream info times out: the row waits (or, before the fix,
    // was dropped: "could not be run", and the batch never finished).
    await waitFor("a's start to fail for want of the log", () =>
      /row 0 of batch_\w+ (waits for the event log to start: |on \S+ could not be run)/.test(sluice!.output()),
    )
    await nats.freeze(false)

    // The log is back: the rows' retries run as the TestClock moves on.
    await waitFor("the batch to complete", async () => {
      await sluice!.adjust(1_000)
      return (await api.call("GET", `/v1/batches/${id}`)).body.status === "completed"
    })
    const results = await api.allResults(id)
    expect(results.map((r) => [r.custom_id, r.status])).toEqual([
      ["a", "completed"],
      ["b", "completed"],
    ])
    expect(sluice.output()).not.toMatch(/could not be run/)
    await sluice.stop()
    const log = await storedEvents({ dataDir: sluice.dataDir, natsUrl: nats.url }, id)
    expect(terminalsPerRow(log, 2)).toEqual([1, 1])
    expect(settlesWithoutStart(log)).toEqual([])
  })
  it("a log hung for longer than the lease: the owner loses the model, takes it back once the log answers, and every row settles once", async () => {
    const { api, id } = await startWith(2_000, [
      chatRow("a", `first ${simDirective.fail(1, 500)}`),
      chatRow("b", `second ${simDirective.latency(1_500)}`),
      chatRow("c", "third"),
    ])
    if (nats === undefined || sluice === undefined) throw new Error("not started")
    await retryWaitsWhileAnotherRuns(api, id)
    await nats.freeze(true)
    await waitFor("the lease to be lost", () => /lease of glm-5.3-flash lost/.test(sluice!.output()))
    await sluice.adjust(60_000)
    await nats.freeze(false)
    await waitFor("the lease to be taken back", () => /lease of glm-5.3-flash (taken back at|lost[^]*taken at)/.test(sluice!.output()))
    await waitFor("the batch to complete", async () => {
      await sluice!.adjust(1_000)
      return (await api.call("GET", `/v1/batches/${id}`)).body.status === "completed"
    })
    expect((await api.allResults(id)).map((r) => [r.custom_id, r.status])).toEqual([
      ["a", "completed"],
      ["b", "completed"],
      ["c", "completed"],
    ])
    await sluice.stop()
    const log = await storedEvents({ dataDir: sluice.dataDir, natsUrl: nats.url }, id)
    expect(terminalsPerRow(log, 3)).toEqual([1, 1, 1])
    expect(settlesWithoutStart(log)).toEqual([])
  })
})
