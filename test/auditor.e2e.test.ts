import { Effect, Layer, Schema, Stream } from "effect"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BatchEvent, isRowEvent } from "../src/domain/batch/events.js"
import { LaneWindow } from "../src/domain/batch/laneWindow.js"
import { laneSubject } from "../src/domain/batch/subjects.js"
import { replay } from "../src/domain/batch/state.js"
import { EventLog } from "../src/eventlog/EventLog.js"
import * as JetStreamEventLog from "../src/eventlog/JetStreamEventLog.js"
import * as SqliteEventLog from "../src/eventlog/SqliteEventLog.js"
import { simDirective } from "../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { chatRow, client } from "./support/client.js"
import { type NatsServer, startNatsServer } from "./support/natsServer.js"
import { type Sluice, startSluice } from "./support/sluice.js"

const decode = Schema.decodeUnknownSync(BatchEvent)
const decodeWindow = Schema.decodeUnknownSync(LaneWindow)
const text = new TextDecoder()

/**
 * Event consumers and auditors read the log, not the API: one filter takes a batch's whole history,
 * one takes an event type across batches, and folding a history reproduces what the API shows.
 */
describe.each(["embedded", "nats"] as const)("the %s event log read by an auditor", (backend) => {
  let sim: Simulator
  let nats: NatsServer | undefined
  let sluice: Sluice
  let logLayer: Layer.Layer<EventLog, unknown>

  beforeAll(async () => {
    sim = await startSimulator()
    if (backend === "nats") nats = await startNatsServer()
    sluice = await startSluice({
      ...(nats === undefined ? {} : { natsUrl: nats.url }),
      models: [{ id: "glm-5.3-flash", upstream_url: sim.url, batch_concurrency: 4 }],
    })
    logLayer =
      nats === undefined
        ? SqliteEventLog.layer({ path: join(sluice.dataDir, "log.sqlite") })
        : JetStreamEventLog.layer({ url: nats.url })
  })
  afterAll(async () => {
    await sluice?.stop()
    sluice?.cleanup()
    await nats?.stop()
    await sim?.close()
  })

  const readLog = (filter: string) =>
    Effect.runPromise(
      Effect.flatMap(EventLog, (log) => Stream.runCollect(log.read(filter, 1))).pipe(
        // A lane window's row events each, at the window's seq and subject.
        Effect.map((chunk) =>
          [...chunk].flatMap((m) => {
            const payload = JSON.parse(text.decode(m.data)) as { type?: string }
            if (payload.type === "lane_window") {
              const window = decodeWindow(payload)
              expect(m.subject).toBe(laneSubject(window.batch_id, window.model))
              return window.events.map((event) => ({ seq: m.seq, subject: m.subject, event: event as BatchEvent }))
            }
            return [{ seq: m.seq, subject: m.subject, event: decode(payload) }]
          }),
        ),
        Effect.provide(logLayer),
        Effect.scoped,
      ),
    )

  it("replaying a batch's history from the log reproduces the batch object's counts and status", async () => {
    const api = client(sluice.url)
    const created = await api.call("POST", "/v1/batches", {
      requests: [
        chatRow("ok-1", "fine"),
        chatRow("bad", `refused ${simDirective.status(400)}`),
        chatRow("ok-2", "also fine"),
        chatRow("flaky", `flaky ${simDirective.fail(1, 500)}`),
      ],
    })
    const id = created.body.id
    const batch = await api.waitFinal(id)
    const history = await readLog(`batch.${id}.>`)
    // Lifecycle and input events on their own type's subject; row events in their model's lane.
    for (const { subject, event } of history) {
      expect(subject).toBe(isRowEvent(event) ? laneSubject(id, "glm-5.3-flash") : `batch.${id}.${event.type}`)
    }
    const state = replay(id, history.map((h) => h.event))
    expect(state.status).toBe(batch.status)
    expect({ total: state.total, completed: state.completed, failed: state.failed }).toEqual(batch.request_counts)
    const types = history.map((h) => h.event.type)
    // The request bodies first, then the rows naming where those are, then the batch.
    expect(types.slice(0, 3)).toEqual(["row_bodies", "rows_added", "batch_created"])
    const [bodies, rows] = [history[0]!.event, history[1]!.event]
    if (bodies.type !== "row_bodies" || rows.type !== "rows_added") throw new Error("not reached")
    expect(bodies.bodies.map((b) => (b as { messages: Array<{ content: string }> }).messages[0]!.content)).toEqual([
      "fine",
      `refused ${simDirective.status(400)}`,
      "also fine",
      `flaky ${simDirective.fail(1, 500)}`,
    ])
    expect(rows.rows.map((r) => r.custom_id)).toEqual(["ok-1", "bad", "ok-2", "flaky"])
    expect(rows.bodies).toEqual({ first_seq: history[0]!.seq, seq: history[0]!.seq })
    expect(types).toContain("batch_created")
    expect(types).toContain("row_retrying")
    expect(types[types.length - 1]).toBe("batch_completed")
    expect(types.filter((t) => t === "row_completed").length).toBe(3)
    expect(types.filter((t) => t === "row_failed").length).toBe(1)
  })

  it("one filter takes one event type across every batch", async () => {
    const api = client(sluice.url)
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const created = await api.call("POST", "/v1/batches", { requests: [chatRow("a", `batch ${i}`)] })
      ids.push(created.body.id)
      await api.waitFinal(created.body.id)
    }
    const completions = await readLog("batch.*.batch_completed")
    expect(completions.every((c) => c.event.type === "batch_completed")).toBe(true)
    const seen = completions.map((c) => c.event.batch_id)
    for (const id of ids) expect(seen.filter((s) => s === id)).toEqual([id])
    const everything = await readLog("batch.>")
    expect(everything.length).toBeGreaterThan(completions.length)
  })

  it("a deleted batch's history is purged from the log with it, leaving its tombstone alone, with no request or result content", async () => {
    const api = client(sluice.url)
    const created = await api.call("POST", "/v1/batches", { requests: [chatRow("a", "to be deleted, a secret prompt")] })
    const done = await api.waitFinal(created.body.id)
    expect((await readLog(`batch.${created.body.id}.>`)).length).toBeGreaterThan(0)
    expect((await api.call("DELETE", `/v1/batches/${created.body.id}`)).status).toBe(200)
    const left = await readLog(`batch.${created.body.id}.>`)
    expect(left.map((m) => [m.subject, Object.keys(m.event).sort()])).toEqual([
      [`batch.${created.body.id}.batch_purged`, ["account_id", "batch_id", "chain_heads", "created_at", "deleted_at", "reason", "type"]],
    ])
    // The last hash-chain link of each purged subject, and nothing else.
    const heads = (left[0]!.event as { chain_heads: Record<string, string> }).chain_heads
    expect(Object.keys(heads)).toContain(`batch.${created.body.id}.batch_created`)
    for (const [subject, link] of Object.entries(heads)) {
      expect(subject.startsWith(`batch.${created.body.id}.`)).toBe(true)
      expect(link).toMatch(/^[0-9a-f]{64}$/)
    }
    expect(left[0]!.event).toMatchObject({ batch_id: created.body.id, account_id: "bootstrap", reason: "deleted" })
    expect(Math.floor((left[0]!.event as { created_at: number }).created_at / 1000)).toBe(done.created_at)
    expect(JSON.stringify(left)).not.toMatch(/secret prompt|Simulated answer/)
    expect((await readLog("batch.*.batch_purged")).map((m) => m.event.batch_id)).toEqual([created.body.id])
  })
})
