import Database from "better-sqlite3"
import { join } from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { type Answer, chatRow, client } from "../support/client.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"
import { type Sluice, startSluice, type TestClockControls } from "../support/sluice.js"
import { waitFor } from "../support/waitFor.js"

/*
 * The seed's Errors table: while batch inference is unavailable, the batch endpoints answer 404 and
 * the message says so. The log is taken away from under the running service: on NATS the server is
 * killed, or suspended (SIGSTOP: connections stay open and nothing answers); the embedded log's write
 * lock is held by another process, as a backup tool or a forgotten `sqlite3` shell holding a
 * transaction would. Interactive requests (chat completions, responses) and the admin API answer
 * 503. Every such answer carries Retry-After, and a refused create stores nothing.
 */

const MODEL = "glm-5.3-flash"

const expectUnavailable = (answer: Answer, status: 404 | 503, what: string) => {
  expect(answer.status, `${what}: ${answer.text}`).toBe(status)
  expect(Object.keys(answer.body.error)).toEqual(["message", "type", "param", "code"])
  if (status === 404) {
    expect(answer.body.error.message).toMatch(/^Batch inference is unavailable at the moment: the event log cannot be reached \(.+\)$/)
    expect(answer.body.error).toMatchObject({ type: "invalid_request_error", code: "batch_inference_unavailable" })
  } else {
    expect(answer.body.error.message).toMatch(/^The event log cannot be reached.* \(.+\)$/)
    expect(answer.body.error).toMatchObject({ type: "server_error", code: "service_unavailable" })
  }
  expect(Number(answer.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
}

interface Outage {
  readonly name: string
  readonly nats: boolean
  /** Takes the log away from under the service; answers how to give it back. */
  readonly takeAway: (where: { nats?: NatsServer; dataDir: string }) => Promise<() => Promise<void>>
}

const outages: ReadonlyArray<Outage> = [
  {
    name: "the embedded log, its write lock held by another process",
    nats: false,
    takeAway: async ({ dataDir }) => {
      const holder = new Database(join(dataDir, "log.sqlite"))
      holder.exec("BEGIN IMMEDIATE")
      return async () => {
        holder.exec("ROLLBACK")
        holder.close()
      }
    },
  },
  {
    name: "NATS, its server killed",
    nats: true,
    takeAway: async ({ nats }) => {
      await nats!.halt()
      return () => nats!.start()
    },
  },
  {
    name: "NATS, its server suspended (SIGSTOP)",
    nats: true,
    takeAway: async ({ nats }) => {
      await nats!.freeze(true)
      return () => nats!.freeze(false)
    },
  },
]

describe.each(outages)("the log away: $name", (outage) => {
  let nats: NatsServer | undefined
  let sim: Simulator
  let sluice: (Sluice & TestClockControls) | undefined
  let giveBack: (() => Promise<void>) | undefined

  beforeAll(async () => {
    sim = await startSimulator({ models: [MODEL] })
    if (outage.nats) nats = await startNatsServer()
  })
  afterEach(async () => {
    await giveBack?.()
    giveBack = undefined
    await sluice?.stop("SIGKILL")
    sluice?.cleanup()
  })
  afterAll(async () => {
    await sim?.close()
    await nats?.stop()
  })

  it("the six batch endpoints answer 404 'Batch inference is unavailable at the moment' with why and Retry-After; chat, responses and admin 503; a create stores nothing; all is back once the log is", async () => {
    sluice = await startSluice({
      ...(nats === undefined ? {} : { natsUrl: nats.url }),
      models: [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 2 }],
      testClock: {},
    })
    const api = client(sluice.url)
    const existing = await api.call("POST", "/v1/batches", { requests: [chatRow("a", "before the outage")] })
    expect(existing.status).toBe(200)
    const id = existing.body.id as string
    await api.waitFinal(id)
    const listed = await api.call("GET", "/v1/batches")

    giveBack = await outage.takeAway({ ...(nats === undefined ? {} : { nats }), dataDir: sluice.dataDir })
    await waitFor("the service to see the log is away", async () => (await api.call("GET", "/v1/batches")).status === 404)

    const endpoints = [
      ["POST", "/v1/batches", { requests: [chatRow("b", "during the outage")] }],
      ["GET", `/v1/batches/${id}`, undefined],
      ["GET", `/v1/batches/${id}/results`, undefined],
      ["GET", `/v1/batches/${id}/results.jsonl`, undefined],
      ["GET", `/v1/batches/${id}/events`, undefined],
      ["POST", `/v1/batches/${id}/cancel`, undefined],
      ["DELETE", `/v1/batches/${id}`, undefined],
      ["GET", "/v1/batches", undefined],
    ] as const
    for (const [method, path, body] of endpoints) expectUnavailable(await api.call(method, path, body), 404, `${method} ${path}`)
    expectUnavailable(
      await api.call("POST", "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: "hi" }] }),
      503,
      "POST /v1/chat/completions",
    )
    expectUnavailable(await api.call("POST", "/v1/responses", { model: MODEL, input: "hi" }), 503, "POST /v1/responses")
    expectUnavailable(await api.admin("POST", "/admin/v1/accounts", { id: "during-outage" }), 503, "POST /admin/v1/accounts")

    await giveBack()
    giveBack = undefined
    await waitFor("the service to see the log is back", async () => (await api.call("GET", "/v1/batches")).status === 200)
    // The create refused during the outage stored nothing.
    expect((await api.call("GET", "/v1/batches")).body).toEqual(listed.body)
    expect((await api.call("GET", `/v1/batches/${id}`)).body.status).toBe("completed")
    const after = await api.call("POST", "/v1/batches", { requests: [chatRow("c", "after the outage")] })
    expect(after.status, after.text).toBe(200)
    expect((await api.waitFinal(after.body.id)).status).toBe("completed")
    expect((await api.admin("POST", "/admin/v1/accounts", { id: "after-outage" })).status).toBe(200)
  })
})
