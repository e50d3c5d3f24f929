import { Chunk, Effect, Stream } from "effect"
import fc from "fast-check"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CHUNK_HEADER, type RawEventLog } from "../../src/eventlog/chunking.js"
import * as JetStreamEventLog from "../../src/eventlog/JetStreamEventLog.js"
import * as SqliteEventLog from "../../src/eventlog/SqliteEventLog.js"
import { type EventCursor, formatCursor, parseCursor } from "../../src/http/eventsStreamCursor.js"
import { simDirective } from "../../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { chatRow, client } from "../support/client.js"
import { startInProcessSluice } from "../support/inProcessSluice.js"
import { BOOTSTRAP_KEY } from "../support/sluice.js"
import { storedEvents, terminalRowTypes, terminalsPerRow } from "../support/storedEvents.js"
import { withSluice } from "../support/withSluice.js"

const FAST = "glm-5.3-flash"
const SLOW = "qwen3.6-35b"

interface SseEvent {
  readonly id: string
  readonly event: string
  readonly dataText: string
}
const dataOf = (e: SseEvent): any => JSON.parse(e.dataText)

type Block = { readonly comment: string } | { readonly event: SseEvent }

/** One SSE block: comment lines only, or exactly `id`, `event` and a one-line `data`, in that order. */
const parseBlock = (block: string): Block => {
  const lines = block.split("\n")
  if (lines.every((l) => l.startsWith(":"))) return { comment: lines.map((l) => l.slice(1).trim()).join("\n") }
  expect(lines).toHaveLength(3)
  const [id, event, data] = lines as [string, string, string]
  expect([id.startsWith("id: "), event.startsWith("event: "), data.startsWith("data: ")]).toEqual([true, true, true])
  return { event: { id: id.slice(4), event: event.slice(7), dataText: data.slice(6) } }
}

/** The blocks of an event stream as they arrive; completes only if the server ends the response. */
async function* blocks(response: Response): AsyncGenerator<Block> {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      buffer += decoder.decode(value, { stream: true })
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        yield parseBlock(buffer.slice(0, end))
        buffer = buffer.slice(end + 2)
      }
    }
    expect(buffer).toBe("")
  } finally {
    // Leaving early disconnects, as a closed EventSource would.
    await reader.cancel().catch(() => undefined)
  }
}

/** Events and comments until the server ends the stream, or until `stopAfter` says so (then disconnects). */
const readEvents = async (response: Response, stopAfter?: (event: SseEvent, all: ReadonlyArray<SseEvent>) => boolean) => {
  expect(response.status).toBe(200)
  expect(response.headers.get("content-type")).toBe("text/event-stream")
  const events: Array<SseEvent> = []
  const comments: Array<string> = []
  for await (const block of blocks(response)) {
    if ("comment" in block) comments.push(block.comment)
    else {
      events.push(block.event)
      if (stopAfter?.(block.event, events) === true) break
    }
  }
  return { events, comments }
}

const seqOf = (e: SseEvent) => Number(e.id.split("-")[0])

describe("event stream cursors", () => {
  const cursor = fc
    .tuple(fc.nat({ max: Number.MAX_SAFE_INTEGER - 1 }), fc.option(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER - 1 })))
    .map(([seq, resume]): EventCursor => ({ seq, from: resume === null || resume > seq ? seq + 1 : resume }))

  it("every cursor reads back as itself from its text", () => {
    fc.assert(
      fc.property(cursor, (c) => {
        expect(parseCursor(formatCursor(c))).toEqual(c)
      }),
    )
  })

  it("refuses text that is no cursor, and a resume point past the event", () => {
    for (const text of ["", "abc", "-1", "1.5", "01", "5-7", "5-0", "12-", "1e3", " 4", "99999999999999999"]) {
      expect(parseCursor(text)).toBeUndefined()
    }
  })
})

describe.each(["embedded", "nats"] as const)("GET /v1/batches/{id}/events on the %s event log", (backend) => {
  const f = withSluice({
    log: backend,
    simulator: { models: [FAST, SLOW] },
    models: (url) => [
      { id: FAST, upstream_url: url, batch_concurrency: 8 },
      // Hanging rows hold both slots until this timeout: a batch of them stays unfinished until cancelled.
      { id: SLOW, upstream_url: url, batch_concurrency: 2, timeout_ms: 2_000 },
    ],
  })
  const api = f.api()

  const open = (batchId: string, options: { key?: string; lastEventId?: string; query?: string } = {}) =>
    fetch(
      `${f.sluice.url}/v1/batches/${batchId}/events${options.query === undefined ? "" : `?last_event_id=${encodeURIComponent(options.query)}`}`,
      {
        headers: {
          authorization: `Bearer ${options.key ?? BOOTSTRAP_KEY}`,
          ...(options.lastEventId === undefined ? {} : { "last-event-id": options.lastEventId }),
        },
      },
    )

  const create = async (requests: ReadonlyArray<ReturnType<typeof chatRow>>) => {
    const created = await api.call("POST", "/v1/batches", { requests })
    expect(created.status).toBe(200)
    return created.body.id as string
  }

  /** The log as stored, parts of large messages apart, straight from the adapter without chunking. */
  const withRawLog = <A>(use: (log: RawEventLog) => Effect.Effect<A, unknown>) =>
    Effect.runPromise(
      Effect.scoped(
        Effect.flatMap(
          f.natsUrl === undefined
            ? SqliteEventLog.makeRaw({ path: join(f.sluice.dataDir, "log.sqlite") })
            : JetStreamEventLog.makeRaw({ url: f.natsUrl }),
          use,
        ),
      ),
    )

  /** A batch that cannot finish before the test cancels it: two rows hang, three wait for their slots. */
  const unfinishedBatch = async (run: string) =>
    create(Array.from({ length: 5 }, (_, i) => chatRow(`${run}-${i}`, `${run} ${i} ${simDirective.hang}`, SLOW)))

  /** Resuming after any one event gives exactly the events after it, then the end. */
  const resumesExactly = async (batchId: string, full: ReadonlyArray<SseEvent>, alsoAfter: ReadonlyArray<number> = []) =>
    fc.assert(
      fc.asyncProperty(fc.nat({ max: full.length - 1 }), fc.boolean(), async (k, viaQuery) => {
        const response = await open(batchId, viaQuery ? { query: full[k]!.id } : { lastEventId: full[k]!.id })
        // The events of one lane window share its id: resuming after it goes on after the whole window.
        let next = k + 1
        while (next < full.length && full[next]!.id === full[k]!.id) next++
        expect((await readEvents(response)).events).toEqual(full.slice(next))
      }),
      { numRuns: 15, examples: [[full.length - 1, false], [0, true], ...alsoAfter.map((k): [number, boolean] => [k, false])] },
    )

  it("sends a running batch's history, then its live events, each stored event once, and ends when it is done", async () => {
    const run = `main-${backend}`
    const requests = [
      chatRow(`${run}-ok-0`, `${run} fine ${simDirective.latency(300)}`),
      chatRow(`${run}-refused`, `${run} refused ${simDirective.status(400)}`),
      chatRow(`${run}-flaky`, `${run} flaky ${simDirective.fail(1, 500)}`),
      ...Array.from({ length: 9 }, (_, i) => chatRow(`${run}-ok-${i + 1}`, `${run} fine ${i} ${simDirective.latency(100 * i)}`)),
      chatRow(`${run}-gone`, `${run} gone ${simDirective.status(404)}`),
    ]
    const id = await create(requests)
    const { events } = await readEvents(await open(id))
    const batch = (await api.call("GET", `/v1/batches/${id}`)).body
    expect(batch.status).toBe("completed")

    // Exactly the stored history, in log order, each message once, its id its log position; but not the
    // request bodies, which a watcher has no use for.
    const everything = await storedEvents({ dataDir: f.sluice.dataDir, natsUrl: f.natsUrl }, id)
    expect(everything[0]!.type).toBe("row_bodies")
    const stored = everything.filter((s) => s.type !== "row_bodies")
    expect(events.map((e) => [seqOf(e), e.event, dataOf(e).row, dataOf(e).attempt])).toEqual(
      stored.map((s) => [s.seq, s.type, s.row, s.attempt]),
    )
    expect(events.map((e) => e.id)).toEqual(stored.map((s) => String(s.seq)))
    for (const e of events) expect([dataOf(e).type, dataOf(e).batch_id]).toEqual([e.event, id])
    expect(events[events.length - 1]!.event).toBe("batch_completed")
    expect(events.map((e) => e.event)).toContain("row_retrying")

    const added = events.filter((e) => e.event === "rows_added").flatMap((e) => dataOf(e).rows)
    expect(added).toEqual(requests.map((r) => ({ custom_id: r.custom_id, model: FAST })))

    const terminals = events.filter((e) => terminalRowTypes.has(e.event)).map(dataOf)
    expect(terminalsPerRow(terminals.map((t) => ({ seq: 0, subject: "", type: t.type, row: t.row })), requests.length)).toEqual(
      requests.map(() => 1),
    )
    for (const t of terminals) expect(t.custom_id).toBe(requests[t.row]!.custom_id)

    // With custom_id a watcher builds every result line from the finished rows' events alone.
    const lines = [...terminals]
      .sort((a, b) => a.row - b.row)
      .map((t) => ({
        id: `batch_req_${t.row + 1}`,
        custom_id: t.custom_id,
        status: t.type.slice("row_".length),
        response: t.type === "row_completed" ? t.response : null,
        error: t.type === "row_completed" ? null : t.error,
      }))
    expect(lines).toEqual(await api.allResults(id))
  })

  it("resuming after any event of a finished batch, chunked events included, gives exactly the rest and ends", async () => {
    const run = `resume-${backend}`
    const id = await create([
      chatRow(`${run}-0`, `${run} small`),
      // Over the log's 900 KiB: its row_bodies and its row_completed are stored in parts.
      chatRow(`${run}-big`, `${run} big ${"x".repeat(1_200_000)}`),
      chatRow(`${run}-2`, `${run} refused ${simDirective.status(400)}`),
      chatRow(`${run}-long`, `${run} long answer ${simDirective.tokens(300_000)}`),
    ])
    await api.waitFinal(id)
    const first = await readEvents(await open(id))
    const full = first.events
    expect(full[full.length - 1]!.event).toBe("batch_completed")
    expect(full.filter((e) => e.event === "rows_added").length).toBeGreaterThan(0)
    for (const e of full.filter((e) => e.event === "rows_added")) {
      for (const row of dataOf(e).rows) expect(Object.keys(row)).toEqual(["custom_id", "model"])
    }
    const parts = await withRawLog((log) => Stream.runCollect(log.read(`batch.${id}.>`, 1)))
    const chunked = Chunk.toReadonlyArray(parts).filter((m) => m.headers?.[CHUNK_HEADER] !== undefined)
    // The big row's row_bodies and the lane window with the long answer's row_completed, two parts each at least.
    expect(new Set(chunked.map((m) => m.subject.split(".")[2]))).toEqual(new Set(["row_bodies", "lane"]))
    const long = full.find((e) => e.event === "row_completed" && dataOf(e).custom_id === `${run}-long`)
    expect(dataOf(long!).response.body.choices[0].message.content.length).toBe(1_200_000)
    await resumesExactly(id, full)
  })

  it("gives cursors that resume past a message whose parts arrived apart, with the other messages in between", async () => {
    const run = `parts-${backend}`
    const id = await unfinishedBatch(run)
    // A large event stored in parts with other events between them, as two writers at once would
    // store theirs: here a repeated batch_created, which changes nothing.
    const created = (await storedEvents({ dataDir: f.sluice.dataDir, natsUrl: f.natsUrl }, id)).find((e) => e.type === "batch_created")
    const { body: batch } = await api.call("GET", `/v1/batches/${id}`)
    const repeated = new TextEncoder().encode(
      JSON.stringify({
        type: "batch_created",
        batch_id: id,
        account_id: "bootstrap",
        key_id: "key_repeated",
        created_at: batch.created_at * 1000,
        expires_at: batch.expires_at * 1000,
        completion_window: "24h",
        metadata: null,
        total: 5,
        models: [SLOW],
      }),
    )
    const part = (i: number) => ({
      subject: `batch.${id}.batch_created`,
      data: repeated.subarray(i * 20, i === 0 ? 20 : repeated.length),
      headers: { [CHUNK_HEADER]: `apart000000000000000000000000000 ${i} 2` },
    })
    const [first] = await withRawLog((log) => log.append([part(0)]))
    const p0 = (first as { seq: number }).seq
    // Hanging rows time out and start again: the batch goes on until it is cancelled.
    const before = (await readEvents(await open(id), (e) => seqOf(e) > p0)).events
    const [last] = await withRawLog((log) => log.append([part(1)]))
    const p1 = (last as { seq: number }).seq
    const resumed = readEvents(await open(id, { lastEventId: before[before.length - 1]!.id }), (e) => seqOf(e) >= p1)
    const { events: after } = await resumed
    expect((await api.call("POST", `/v1/batches/${id}/cancel`)).status).toBe(200)
    await api.waitFinal(id)

    const { events: full } = await readEvents(await open(id))
    expect(full[full.length - 1]!.event).toBe("batch_cancelled")
    expect([...before, ...after]).toEqual(full.filter((e) => seqOf(e) <= p1))
    const between = full.filter((e) => seqOf(e) > p0 && seqOf(e) < p1)
    expect(between.length).toBeGreaterThan(0)
    for (const e of between) expect(e.id).toBe(`${seqOf(e)}-${p0}`)
    for (const e of full.filter((e) => seqOf(e) < p0 || seqOf(e) >= p1)) expect(e.id).toBe(String(seqOf(e)))
    expect(full.filter((e) => e.event === "batch_created").map((e) => [e.id, dataOf(e).key_id])).toEqual([
      [String(created!.seq), expect.stringMatching(/^key_[0-9a-f]+$/)],
      [String(p1), "key_repeated"],
    ])
    await resumesExactly(id, full, [full.indexOf(between[0]!), full.indexOf(between[between.length - 1]!)])
  })

  it("resumed mid-batch, a stream goes on exactly where it broke off; a cancelled batch's stream ends", async () => {
    const run = `live-${backend}`
    const id = await unfinishedBatch(run)
    const started = (e: SseEvent, all: ReadonlyArray<SseEvent>) =>
      e.event === "row_started" && all.filter((x) => x.event === "row_started").length === 2
    const before = (await readEvents(await open(id), started)).events
    const last = before[before.length - 1]!

    const resumed = await open(id, { lastEventId: last.id })
    const rest = readEvents(resumed)
    expect((await api.call("POST", `/v1/batches/${id}/cancel`)).status).toBe(200)
    const { events: after } = await rest

    const full = (await readEvents(await open(id))).events
    expect([...before, ...after]).toEqual(full)
    expect(after[after.length - 1]!.event).toBe("batch_cancelled")
    const cancelling = after.find((e) => e.event === "batch_cancelling")
    const cancelledRows = full.filter((e) => e.event === "row_cancelled").map(dataOf)
    expect(dataOf(cancelling!).cancelled_rows + cancelledRows.length).toBe(5)
    for (const row of cancelledRows) expect(row.custom_id).toBe(`${run}-${row.row}`)
    expect((await api.call("GET", `/v1/batches/${id}`)).body.status).toBe("cancelled")
  })

  it("answers 400 for a Last-Event-ID that is no cursor of it, naming the header, and 404 for a batch not yours", async () => {
    const id = await create([chatRow(`errors-${backend}`, "errors")])
    for (const bad of ["abc", "-1", "5-7", "1.5"]) {
      const answer = await open(id, { lastEventId: bad })
      expect(answer.status).toBe(400)
      const body = (await answer.json()) as any
      expect(body.error).toMatchObject({ type: "invalid_request_error", param: "Last-Event-ID" })
      expect(body.error.message).toContain("Last-Event-ID")
      expect(body.error.message).toContain(bad)
    }
    const query = await open(id, { query: "nope" })
    expect(query.status).toBe(400)
    expect(((await query.json()) as any).error).toMatchObject({ type: "invalid_request_error", param: "last_event_id" })

    const unknown = await open("batch_0123456789abcdef0123456789abcdef")
    expect(unknown.status).toBe(404)
    expect(((await unknown.json()) as any).error).toEqual({
      message: "No batch found with id 'batch_0123456789abcdef0123456789abcdef'",
      type: "invalid_request_error",
      param: null,
      code: "batch_not_found",
    })
    const account = `events-${backend}-${Math.random().toString(36).slice(2, 8)}`
    await api.admin("POST", "/admin/v1/accounts", { id: account, tier: "internal" })
    const key = (await api.admin("POST", `/admin/v1/accounts/${account}/keys`, {})).body.key
    const other = await open(id, { key })
    expect(other.status).toBe(404)
    expect(((await other.json()) as any).error.code).toBe("batch_not_found")
    expect((await fetch(`${f.sluice.url}/v1/batches/${id}/events`)).status).toBe(401)
  })
})

/*
 * A server whose actors run on a test clock: a batch whose retry waits for that clock stays in
 * progress, idle, for as long as the clock is not moved. One such batch is watched from the start
 * of this file to its end, to see the keepalive comments of a stream left idle for 15 s.
 */
type InProcessSluice = Awaited<ReturnType<typeof startInProcessSluice>>

const startClocked = (sim: Simulator) =>
  startInProcessSluice({
    models: [
      { id: FAST, upstream_url: sim.url },
      // Hanging rows run until the test clock passes this timeout: two days.
      { id: SLOW, upstream_url: sim.url, batch_concurrency: 2, timeout_ms: 48 * 3_600_000 },
    ],
  })

const openOn = (sluice: InProcessSluice, batchId: string) =>
  fetch(`${sluice.url}/v1/batches/${batchId}/events`, { headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` } })

let clocked: {
  readonly sim: Simulator
  readonly sluice: InProcessSluice
  readonly idleBatch: string
  readonly idle: Array<Block>
  readonly idleEnded: Promise<void>
  stopped?: Promise<void>
}

beforeAll(async () => {
  const sim = await startSimulator({ models: [FAST, SLOW] })
  const sluice = await startClocked(sim)
  const api = client(sluice.url)
  const idleBatch = (await api.call("POST", "/v1/batches", { requests: [chatRow("idle", `idle ${simDirective.status(503)}`)] })).body.id
  const response = await openOn(sluice, idleBatch)
  expect(response.status).toBe(200)
  const idle: Array<Block> = []
  const idleEnded = (async () => {
    for await (const block of blocks(response)) idle.push(block)
  })()
  // Checked by the last test; until then a failure must not go unhandled.
  idleEnded.catch(() => undefined)
  clocked = { sim, sluice, idleBatch, idle, idleEnded }
})
afterAll(async () => {
  await (clocked?.stopped ?? clocked?.sluice.stop())
  await clocked?.sim.close()
})

describe("event streams on a server whose actors run on a test clock", () => {
  /** Reads events up to and including the first one `until` accepts; fails if the stream ends first. */
  const readUntil = async (iterator: AsyncGenerator<Block>, until: (e: SseEvent) => boolean) => {
    const events: Array<SseEvent> = []
    for (;;) {
      const next = await iterator.next()
      expect(next.done).toBe(false)
      const block = next.value as Block
      if ("event" in block) {
        events.push(block.event)
        if (until(block.event)) return events
      }
    }
  }

  const expiresWhileRowsRun = async (sluice: InProcessSluice) => {
    const api = client(sluice.url)
    const requests = Array.from({ length: 5 }, (_, i) => chatRow(`expiring-${i}`, `expiring ${i} ${simDirective.hang}`, SLOW))
    const id = (await api.call("POST", "/v1/batches", { requests })).body.id
    const iterator = blocks(await openOn(sluice, id))
    let started = 0
    const events = await readUntil(iterator, (e) => e.event === "row_started" && ++started === 2)

    await sluice.adjust(24 * 3_600_000 + 1_000)
    events.push(...(await readUntil(iterator, (e) => e.event === "batch_expiring")))
    expect(dataOf(events[events.length - 1]!).expired_rows).toBe(3)
    // Its rows still run, so it is not final yet: the stream goes on.
    expect((await api.call("GET", `/v1/batches/${id}`)).body.status).toBe("in_progress")

    // The running rows time out only now: the last to settle makes the batch expired, and the stream ends.
    await sluice.adjust(48 * 3_600_000)
    const rest: Array<SseEvent> = []
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) {
      if ("event" in next.value) rest.push(next.value.event)
    }
    const failed = rest.filter((e) => e.event === "row_failed").map(dataOf)
    expect(failed.map((f) => [f.custom_id, f.error.code]).sort()).toEqual(
      events
        .filter((e) => e.event === "row_started")
        .map((e) => [`expiring-${dataOf(e).row}`, "timeout"])
        .sort(),
    )
    expect(rest.map((e) => e.event).filter((t) => t !== "row_failed")).toEqual(["batch_expired"])
    expect(dataOf(rest[rest.length - 1]!).expired_rows).toBe(0)
    expect((await api.call("GET", `/v1/batches/${id}`)).body.status).toBe("expired")
    const results = await api.allResults(id)
    expect(results.map((r) => r.status).sort()).toEqual(["expired", "expired", "expired", "failed", "failed"])
  }

  it("an expired batch's stream goes on until the rows still running then have settled", async () => {
    // Its own server: moving the clock would end the idle batch watched on the other.
    const sluice = await startClocked(clocked.sim)
    try {
      await expiresWhileRowsRun(sluice)
    } finally {
      await sluice.stop()
    }
  })

  it("keeps an idle stream open with keepalive comments, and ends it cleanly when the server stops", async () => {
    const { sluice, idle, idleEnded } = clocked
    const keepalive = (b: Block) => "comment" in b && b.comment === "keepalive"
    while (!idle.some(keepalive)) await new Promise((r) => setTimeout(r, 250))
    expect(idle.filter((b) => "event" in b).map((b) => ("event" in b ? b.event.event : ""))).toEqual([
      "rows_added",
      "batch_created",
      "batch_started",
      "row_started",
      "row_retrying",
    ])
    expect(idle.filter((b) => "comment" in b && !keepalive(b))).toEqual([{ comment: `events of ${clocked.idleBatch}` }])
    // The batch's retry waits on the clock, so the stream is still open: only the server's stop ends it.
    // Cut off by the shutdown grace instead, the connection would break and this would reject.
    const seen = idle.length
    clocked.stopped = sluice.stop()
    await Promise.all([clocked.stopped, idleEnded])
    expect(idle.slice(seen).filter((b) => !keepalive(b))).toEqual([])
  })
})
