import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { FACTS_MAX_AGE_MS, FACTS_REFRESH_AFTER_MS, makeLiveFacts } from "../../../src/http/front/liveFacts.js"
import type { FrontReply, LiveFacts } from "../../../src/http/front/protocol.js"
import type { BatchRow } from "../../../src/projections/batchReads.js"

/** A batch row with only what the facts look at; the rest is never read. */
const row = (id: string, extra: Partial<BatchRow> = {}): BatchRow =>
  ({ id, status: "in_progress", closing: null, total: 10, running: 2, completed: 1, failed: 0, cancelled: 0, retrying: 0, ...extra }) as BatchRow

const factsAt = (n: number): LiveFacts => ({
  eta: { rows_ahead: n, estimated_completion_at: 1_000 + n },
  waiting: { reason: "model_capacity", since: n, model: "m", detail: `asked #${n}` } as unknown as LiveFacts["waiting"],
})

/** The dispatch process's side: each ask answered when the test says, with facts numbered by ask. */
const dispatch = () => {
  const asks: Array<{ rows: ReadonlyArray<string>; answer: (ok: boolean) => void }> = []
  let n = 0
  const askLive = (rows: ReadonlyArray<BatchRow>) =>
    new Promise<FrontReply>((resolve) => {
      const number = ++n
      asks.push({
        rows: rows.map((r) => r.id),
        answer: (ok) => resolve(ok ? { t: "reply", id: number, ok: true, now: 0, live: rows.map(() => factsAt(number)) } : { t: "reply", id: number, ok: false }),
      })
    })
  return { asks, askLive }
}
const flush = () => new Promise((r) => setImmediate(r))

describe("a front's live facts of running batches", () => {
  /** Facts with batch a's asked (ask #1) and answered at time 0; `clock.now` moves the time. */
  const keptA = async () => {
    const clock = { now: 0 }
    const d = dispatch()
    const facts = makeLiveFacts(d.askLive, () => clock.now)
    const first = facts([row("a")], 0)
    expect(d.asks.map((a) => a.rows)).toEqual([["a"]])
    d.asks[0]!.answer(true)
    expect((await first)!.get("a")).toEqual(factsAt(1))
    return { d, facts, clock }
  }

  it("asks for a batch it holds nothing of, then answers from what it kept without asking", async () => {
    const { d, facts, clock } = await keptA()
    clock.now = FACTS_REFRESH_AFTER_MS - 1
    expect((await facts([row("a")], 0))!.get("a")).toEqual(factsAt(1))
    expect(d.asks).toHaveLength(1)
  })

  it("past a quarter second answers what it kept and asks again in the background, once however many reads come", async () => {
    const { d, facts, clock } = await keptA()
    clock.now = FACTS_REFRESH_AFTER_MS
    for (let i = 0; i < 5; i++) expect((await facts([row("a")], 0))!.get("a")).toEqual(factsAt(1))
    expect(d.asks).toHaveLength(2)
    d.asks[1]!.answer(true)
    await flush()
    expect((await facts([row("a")], 0))!.get("a")).toEqual(factsAt(2))
  })

  it("waits for new facts once what it kept is a second old, and a failed ask hands the read on", async () => {
    const { d, facts, clock } = await keptA()
    clock.now = FACTS_MAX_AGE_MS
    let settled = false
    const late = facts([row("a")], 0).then((got) => ((settled = true), got))
    await flush()
    expect(settled).toBe(false)
    d.asks[1]!.answer(false)
    expect(await late).toBeUndefined()
  })

  it("a background ask that fails leaves what was kept, and the next read asks again", async () => {
    const { d, facts, clock } = await keptA()
    clock.now = FACTS_REFRESH_AFTER_MS + 1
    await facts([row("a")], 0)
    d.asks[1]!.answer(false)
    await flush()
    expect((await facts([row("a")], 0))!.get("a")).toEqual(factsAt(1))
    expect(d.asks).toHaveLength(3)
  })

  it("asks again, however young what it kept, once a command has moved the read model's lifecycle sequence", async () => {
    const d = dispatch()
    const facts = makeLiveFacts(d.askLive, () => 0)
    const first = facts([row("a")], 7)
    d.asks[0]!.answer(true)
    await first
    expect((await facts([row("a")], 7))!.get("a")).toEqual(factsAt(1))
    const after = facts([row("a")], 8)
    expect(d.asks).toHaveLength(2)
    d.asks[1]!.answer(true)
    expect((await after)!.get("a")).toEqual(factsAt(2))
  })

  it("decides from the row alone what the row decides: final, closing, or nothing waiting to start", async () => {
    const d = dispatch()
    const facts = makeLiveFacts(d.askLive, () => 0)
    const got = await facts([row("done", { status: "completed" }), row("closing", { status: "cancelling", closing: "cancelled" })], 0)
    expect(d.asks).toHaveLength(0)
    expect(got!.get("done")).toEqual({ eta: { rows_ahead: null, estimated_completion_at: null }, waiting: null })
    expect(got!.get("closing")).toEqual({ eta: { rows_ahead: 0, estimated_completion_at: null }, waiting: null })
    const asked = facts([row("a")], 0)
    d.asks[0]!.answer(true)
    await asked
    // Every unsettled row now runs: whatever was kept, it waits on nothing.
    const running = await facts([row("a", { running: 9 })], 0)
    expect(running!.get("a")).toEqual({ eta: factsAt(1).eta, waiting: null })
  })

  it("never answers facts asked more than a second before the read, nor before a command the read sees, whatever the reads' times and answers (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ after: fc.integer({ min: 0, max: 1_500 }), ok: fc.boolean(), ids: fc.subarray(["a", "b", "c"], { minLength: 1 }), command: fc.boolean() }), { minLength: 1, maxLength: 30 }),
        async (reads) => {
          let now = 0
          const d = dispatch()
          // The dispatch process numbers its answers by ask: the time and lifecycle sequence of each.
          const askedAt: Array<{ readonly at: number; readonly version: number }> = []
          let version = 0
          const facts = makeLiveFacts((rows) => {
            askedAt.push({ at: now, version })
            return d.askLive(rows)
          }, () => now)
          for (const read of reads) {
            now += read.after
            if (read.command) version++
            const pending = facts(read.ids.map((id) => row(id)), version)
            // Every ask is answered at once, background ones included.
            for (const a of d.asks.splice(0)) a.answer(read.ok)
            const got = await pending
            await flush()
            if (got === undefined) continue
            for (const id of read.ids) {
              const n = got.get(id)!.eta.rows_ahead!
              expect(now - askedAt[n - 1]!.at).toBeLessThan(FACTS_MAX_AGE_MS)
              expect(askedAt[n - 1]!.version).toBe(version)
            }
          }
        },
      ),
      { numRuns: 200 },
    )
  })
})
