import { Effect } from "effect"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { batchSubject } from "../../src/domain/batch/subjects.js"
import * as SqliteEventLog from "../../src/eventlog/SqliteEventLog.js"
import { chatRow, type client } from "../support/client.js"
import { storedEvents } from "../support/storedEvents.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"

/*
 * The seed's 404 "was deleted": a deleted batch (by DELETE or by retention) leaves a tombstone in the
 * log and the read model, so its owner is told it was deleted and when; a batch that never existed,
 * or another account's, reads as plain not found. Through the public HTTP API, on both logs.
 */

const DAY = 86_400_000
const MODEL = "glm-5.3-flash"

const expectNotFound = (answer: { status: number; body: any }, message: string | RegExp, code: string) => {
  expect(answer.status).toBe(404)
  expect(Object.keys(answer.body.error)).toEqual(["message", "type", "param", "code"])
  expect(answer.body.error).toMatchObject({ type: "invalid_request_error", param: null, code })
  if (typeof message === "string") expect(answer.body.error.message).toBe(message)
  else expect(answer.body.error.message).toMatch(message)
}

const everyEndpoint = (id: string) =>
  [
    ["GET", `/v1/batches/${id}`],
    ["GET", `/v1/batches/${id}/results`],
    ["GET", `/v1/batches/${id}/results.jsonl`],
    ["GET", `/v1/batches/${id}/events`],
    ["POST", `/v1/batches/${id}/cancel`],
    ["DELETE", `/v1/batches/${id}`],
  ] as const

/** A Sluice on a TestClock for each test; a restart passes the data directory and the stopped one's time. */
const tombstoneFixture = (log: "embedded" | "nats") => {
  const f = withSluice({
    log,
    lifetime: "test",
    simulator: { models: [MODEL] },
    models: (url) => [{ id: MODEL, upstream_url: url, batch_concurrency: 4, input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
    sluice: { testClock: {} },
  })
  const start = (dataDir?: string, startMs?: number) =>
    f.start({ ...(dataDir === undefined ? {} : { dataDir }), testClock: startMs === undefined ? {} : { startMs } })
  return { f, start }
}

describe.each([
  { name: "the embedded log", log: "embedded" },
  { name: "NATS JetStream", log: "nats" },
] as const)("tombstones, on $name", ({ log }) => {
  const { f, start } = tombstoneFixture(log)

  const finishedBatch = async (api: ReturnType<typeof client>) => {
    const created = await api.call("POST", "/v1/batches", { requests: [chatRow("q-1", "a prompt the tombstone must not keep")] })
    expect(created.status, created.text).toBe(200)
    return api.waitFinal(created.body.id)
  }

  it("a deleted batch answers its owner 404 saying it was deleted and when, on every endpoint; a stranger and a batch that never existed get the plain not-found", async () => {
    await start()
    const api = f.api()
    const batch = await finishedBatch(api)
    const deletedAt = await f.sluice.now()
    expect((await api.call("DELETE", `/v1/batches/${batch.id}`)).status).toBe(200)

    const when = new Date(Math.floor(deletedAt / 1000) * 1000).toISOString().replace(".000Z", "Z")
    const deleted = new RegExp(`^Batch '${batch.id}' was deleted at ${when} \\(Unix ${Math.floor(deletedAt / 1000)}\\); its requests and results are gone$`)
    for (const [method, path] of everyEndpoint(batch.id)) expectNotFound(await api.call(method, path), deleted, "batch_deleted")
    expect((await api.call("GET", "/v1/batches")).body.data).toEqual([])

    const account = `acct-${Math.random().toString(36).slice(2, 10)}`
    await api.admin("POST", "/admin/v1/accounts", { id: account, tier: "internal" })
    const stranger = f.api((await api.admin("POST", `/admin/v1/accounts/${account}/keys`, {})).body.key)
    for (const [method, path] of everyEndpoint(batch.id)) {
      expectNotFound(await stranger.call(method, path), `No batch found with id '${batch.id}'`, "batch_not_found")
    }
    for (const [method, path] of everyEndpoint("batch_never_was")) {
      expectNotFound(await api.call(method, path), "No batch found with id 'batch_never_was'", "batch_not_found")
    }

    // The tombstone is all the log keeps of the batch, and survives a restart.
    const log = await storedEvents({ dataDir: f.sluice.dataDir, natsUrl: f.natsUrl }, batch.id)
    expect(log.map((e) => e.subject)).toEqual([batchSubject(batch.id, "batch_purged")])
    // It keeps what the rows cost, by day, so a read model rebuilt from this log still counts it.
    expect(batch.cost_usd).toBeGreaterThan(0)
    const day = new Date(batch.completed_at * 1000).toISOString().slice(0, 10)
    expect(log[0]!.payload?.spent).toEqual({ [day]: batch.cost_usd })
    const at = await f.sluice.now()
    await f.sluice.stop()
    await start(f.sluice.dataDir, at)
    expectNotFound(await f.api().call("GET", `/v1/batches/${batch.id}`), deleted, "batch_deleted")
  })

  it("a batch deleted by retention says so", async () => {
    await start()
    const api = f.api()
    const batch = await finishedBatch(api)
    await f.sluice.adjust(7 * DAY + 60_000)
    await waitFor("retention to delete the batch", async () => (await api.call("GET", `/v1/batches/${batch.id}`)).status === 404)
    const answer = await api.call("GET", `/v1/batches/${batch.id}`)
    expectNotFound(answer, new RegExp(`^Batch '${batch.id}' was deleted at .* \\(Unix \\d+\\), when its retention period ended; its requests and results are gone$`), "batch_deleted")
    // The purge follows the deletion the API already shows.
    await waitFor("the history to be purged", async () => (await storedEvents({ dataDir: f.sluice.dataDir, natsUrl: f.natsUrl }, batch.id)).length === 1)
    const log = await storedEvents({ dataDir: f.sluice.dataDir, natsUrl: f.natsUrl }, batch.id)
    expect(log.map((e) => e.type)).toEqual(["batch_purged"])
  })
})

// The embedded log's file can be written as a crashed process would have left it; the resumption itself
// does not depend on the log.
describe("an interrupted deletion", () => {
  const { f, start } = tombstoneFixture("embedded")

  it("on the embedded log, a deletion a crash interrupted before the purge is finished at the next start: history purged, tombstone written", async () => {
    await start()
    const api = f.api()
    const created = await api.call("POST", "/v1/batches", { requests: [chatRow("q-1", "x")] })
    const batch = await api.waitFinal(created.body.id)
    const at = await f.sluice.now()
    const dataDir = f.sluice.dataDir
    await f.sluice.stop("SIGKILL")
    // What a process killed right after appending the deletion leaves: batch_deleted, nothing purged.
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const raw = yield* SqliteEventLog.makeRaw({ path: join(dataDir, "log.sqlite") })
          const event = { type: "batch_deleted", batch_id: batch.id, at, reason: "deleted" }
          yield* raw.append([{ subject: batchSubject(batch.id, "batch_deleted"), data: new TextEncoder().encode(JSON.stringify(event)) }])
        }),
      ),
    )
    expect((await storedEvents({ dataDir }, batch.id)).map((e) => e.type)).toContain("batch_created")
    await start(dataDir, at)
    await waitFor("the deletion to be finished", async () => (await storedEvents({ dataDir }, batch.id)).length === 1)
    expect((await storedEvents({ dataDir }, batch.id)).map((e) => e.type)).toEqual(["batch_purged"])
    expectNotFound(await f.api().call("GET", `/v1/batches/${batch.id}`), /was deleted at/, "batch_deleted")
  })
})
