import { join } from "node:path"
import { Chunk, Context, Effect, Layer, Stream } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { eventTime } from "../../src/domain/batch/eventTime.js"
import { decodeBatchMessage, eventsOf } from "../../src/domain/batch/laneWindow.js"
import { oneBatch } from "../../src/domain/batch/subjects.js"
import { EventLog } from "../../src/eventlog/EventLog.js"
import * as JetStreamEventLog from "../../src/eventlog/JetStreamEventLog.js"
import * as SqliteEventLog from "../../src/eventlog/SqliteEventLog.js"
import { simDirective } from "../../src/sim/Directives.js"
import { chatRow } from "../support/client.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"

/*
 * `as_of` answers a batch and its results as they were at an instant, from the batch's events alone.
 * The property: for a random batch driven through random steps, the answer `as_of` gives at the time
 * of each of its events equals what the API answered then. The actors' TestClock moves in whole
 * seconds and the retried rows wait for a 429's one-second Retry-After, so the test looks at the API
 * once in each second, after everything in it has happened; that every event's time is one of those
 * seconds is checked against the batch's events in the log.
 */

const MODEL = "glm-5.3-flash"
const SECOND = 1_000

type Behaviour = "ok" | "retried" | "refused"
const prompt = (b: Behaviour, i: number) =>
  b === "ok" ? `row ${i}` : b === "retried" ? `row ${i} ${simDirective.fail(1, 429)}` : `row ${i} ${simDirective.status(400)}`

type Step = "tick" | "cancel"

describe.each([
  { name: "the embedded log", log: "embedded" },
  { name: "NATS JetStream", log: "nats" },
] as const)("as_of, on $name", ({ log }) => {
  const f = withSluice({
    log,
    inProcess: true,
    simulator: { models: [MODEL] },
    models: (url) => [{ id: MODEL, upstream_url: url, batch_concurrency: 8 }],
    sluice: { startAt: Math.floor(Date.now() / SECOND) * SECOND },
  })
  const api = f.api()

  /** Nothing more will happen until the clock moves: no row runs or is about to start, and the read model has the whole log. */
  const settled = async (id: string) => {
    let last = ""
    await waitFor(`batch ${id} to settle`, async () => {
      const ready = (await api.call("GET", "/readyz")).body
      const batch = (await api.call("GET", `/v1/batches/${id}`)).body
      const rows = (await api.call("GET", `/v1/batches/${id}/results`)).body.data as Array<any>
      const busy = rows.some((r) => r.status === "running" || (r.status === "queued" && r.error === null && batch.status !== "cancelling"))
      const now = JSON.stringify([ready.log.head, ready.projections.applied, batch, rows])
      const still = !busy && f.sim.stats().inFlight === 0 && ready.projections.lag_events === 0 && now === last
      last = now
      return still
    }, { everyMs: 60 })
  }

  /** The second of each event of the batch, by its own time (input chunks have none), read from the log. */
  const eventSeconds = (id: string) =>
    Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const layer = f.natsUrl === undefined ? SqliteEventLog.layer({ path: join(f.sluice.dataDir, "log.sqlite") }) : JetStreamEventLog.layer({ url: f.natsUrl })
          const log = Context.get(yield* Layer.build(layer), EventLog)
          const messages = Chunk.toReadonlyArray(yield* Stream.runCollect(log.read(oneBatch(id), 1)))
          return messages.flatMap((m) => {
            const decoded = decodeBatchMessage(m.data)
            return decoded === undefined ? [] : eventsOf(decoded).flatMap((e) => {
              const at = eventTime(e)
              return at === undefined ? [] : [Math.floor(at / SECOND)]
            })
          })
        }),
      ),
    )

  const snapshot = async (id: string, query = "") => ({
    batch: await api.call("GET", `/v1/batches/${id}${query}`),
    results: await api.call("GET", `/v1/batches/${id}/results${query}`),
  })

  it("as_of at every event's time of a random batch equals what the API answered at that moment", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom<Behaviour>("ok", "retried", "refused"), { minLength: 1, maxLength: 4 }),
        fc.array(fc.constantFrom<Step>("tick", "tick", "cancel"), { minLength: 1, maxLength: 4 }),
        async (behaviours, steps) => {
          await f.sluice.adjust(SECOND)
          const created = await api.call("POST", "/v1/batches", {
            requests: behaviours.map((b, i) => chatRow(`r${i}`, prompt(b, i))),
          })
          expect(created.status, created.text).toBe(200)
          const id = created.body.id as string
          const seen = new Map<number, Awaited<ReturnType<typeof snapshot>>>()
          const look = async () => {
            await settled(id)
            seen.set(Math.floor((await f.sluice.now()) / SECOND), await snapshot(id))
          }
          await look()
          for (const step of [...steps, "tick", "tick"] as const) {
            await f.sluice.adjust(SECOND)
            if (step === "cancel") expect((await api.call("POST", `/v1/batches/${id}/cancel`)).status).toBe(200)
            await look()
          }
          const times = await eventSeconds(id)
          expect(times.length).toBeGreaterThan(behaviours.length)
          expect(times.filter((t) => !seen.has(t)), "events in a second the test did not look at").toEqual([])
          for (const [second, then] of seen) {
            const asOf = await snapshot(id, `?as_of=${second}`)
            expect(asOf.batch.status, asOf.batch.text).toBe(200)
            // The scheduler's estimates are predictions made at the moment, and why the batch waited comes from
            // the actors' state then, not the log: as_of has neither.
            const { rows_ahead, estimated_completion_at, waiting_on, ...recorded } = then.batch.body
            expect(asOf.batch.body, `batch at ${second}`).toEqual({ ...recorded, rows_ahead: null, estimated_completion_at: null, waiting_on: null })
            expect(asOf.results.body, `results at ${second}`).toEqual(then.results.body)
          }
          const before = Math.min(...seen.keys()) - 1
          const early = await api.call("GET", `/v1/batches/${id}?as_of=${before}`)
          expect(early.status).toBe(404)
          expect(early.body.error.message).toContain(`No batch found with id '${id}' as of ${before}`)
          expect((await api.call("GET", `/v1/batches/${id}/results?as_of=${before}`)).status).toBe(404)
        },
      ),
      { numRuns: 8 },
    )
  })

  it("a bad as_of is a 400 naming the field, on both endpoints", async () => {
    const created = await api.call("POST", "/v1/batches", { requests: [chatRow("x", "hello")] })
    for (const path of [`/v1/batches/${created.body.id}`, `/v1/batches/${created.body.id}/results`]) {
      for (const bad of ["yesterday", "-5", "1.5", ""]) {
        const answer = await api.call("GET", `${path}?as_of=${bad}`)
        expect(answer.status, `${path} as_of=${bad}`).toBe(400)
        expect(answer.body.error.param).toBe("as_of")
        expect(answer.body.error.message).toContain(`'as_of' must be a Unix time in whole seconds`)
      }
    }
  })
})
