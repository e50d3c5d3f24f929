import { describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { chatRow, client } from "../support/client.js"
import type { TestClockControls } from "../support/sluice.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"

/*
 * The seed's rule that a client may read the results once the batch has reached a final status: a
 * batch whose key is revoked, or whose window closes, while rows run stays in its status until they
 * have finished, and once final nothing about it changes. Driven through the public HTTP API against
 * the simulator, on both logs, with Sluice's actors on a TestClock: a hanging row runs until the
 * clock passes its timeout, so the test decides when the last running row ends. Every poll checks
 * what a client would rely on.
 */

const HOUR = 3_600_000
const FINAL = ["completed", "failed", "expired", "cancelled"]
const MODEL = "glm-5.3-flash"
// Longer than the window, so that a hanging row outlives the expiry and ends only when the test says.
const TIMEOUT_MS = 30 * HOUR

type Api = ReturnType<typeof client>

interface Snapshot {
  readonly batch: any
  readonly rows: ReadonlyArray<any>
}

/** The batch and its rows as of one moment: read again until the batch did not move while its rows were read. */
const snapshot = async (api: Api, id: string): Promise<Snapshot> => {
  for (;;) {
    const before = await api.call("GET", `/v1/batches/${id}`)
    expect(before.status, before.text).toBe(200)
    const rows = await api.allResults(id)
    const after = await api.call("GET", `/v1/batches/${id}`)
    if (JSON.stringify(after.body) === JSON.stringify(before.body)) return { batch: before.body, rows }
  }
}

/** What every poll must show: the counts add up, a final status only once nothing runs or waits. */
const checkPoll = ({ batch, rows }: Snapshot) => {
  const count = (...statuses: Array<string>) => rows.filter((r) => statuses.includes(r.status)).length
  expect(batch.request_counts).toEqual({ total: rows.length, completed: count("completed"), failed: count("failed", "expired") })
  if (count("running", "queued") > 0) expect(FINAL, JSON.stringify(batch)).not.toContain(batch.status)
  if (FINAL.includes(batch.status)) expect(count("running", "queued")).toBe(0)
}

/** Polls until `done` holds, checking every poll; answers the last snapshot. */
const pollUntil = async (api: Api, id: string, what: string, done: (s: Snapshot) => boolean): Promise<Snapshot> => {
  let last: Snapshot | undefined
  await waitFor(what, async () => {
    last = await snapshot(api, id)
    checkPoll(last)
    return done(last)
  })
  return last!
}

/** Once final, nothing changes: polled again while the clock moves on (within the retention period). */
const staysFinal = async (sluice: TestClockControls, api: Api, id: string, final: Snapshot) => {
  for (let i = 0; i < 5; i++) {
    await sluice.adjust(HOUR)
    await new Promise((r) => setTimeout(r, 100))
    const again = await snapshot(api, id)
    checkPoll(again)
    expect(again).toEqual(final)
  }
  const cancelled = await api.call("POST", `/v1/batches/${id}/cancel`)
  expect(cancelled.body).toEqual(final.batch)
  expect(await snapshot(api, id)).toEqual(final)
}

const logs = [
  { name: "the embedded log", log: "embedded" },
  { name: "NATS JetStream", log: "nats" },
] as const

describe.each(logs)("final means final, on $name", ({ log }) => {
  const f = withSluice({
    log,
    lifetime: "test",
    simulator: { models: [MODEL] },
    models: (url) => [{ id: MODEL, upstream_url: url, batch_concurrency: 2, timeout_ms: TIMEOUT_MS, input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
    sluice: { testClock: {} },
  })

  const newAccount = async (admin: Api) => {
    const id = `acct-${Math.random().toString(36).slice(2, 10)}`
    expect((await admin.admin("POST", "/admin/v1/accounts", { id, tier: "internal" })).status).toBe(200)
    const key = async () => {
      const created = await admin.admin("POST", `/admin/v1/accounts/${id}/keys`, {})
      expect(created.status).toBe(200)
      return { id: created.body.id as string, api: f.api(created.body.key as string) }
    }
    return { creator: await key(), reader: await key() }
  }

  /** A row that hangs until the clock passes its timeout, one that answers after a moment, two that wait for a slot. */
  const rows = [
    chatRow("hangs", `hangs ${simDirective.hang}`),
    chatRow("answers", `answers ${simDirective.latency(400)}`),
    chatRow("waits-1", "waits for a slot"),
    chatRow("waits-2", "waits for a slot too"),
  ]

  const createRunning = async (api: Api) => {
    const created = await api.call("POST", "/v1/batches", { requests: rows })
    expect(created.status, created.text).toBe(200)
    const id = created.body.id as string
    await pollUntil(api, id, "both slots to run", (s) => s.rows.filter((r) => r.status === "running").length === 2)
    return id
  }

  it("a revoked key: the rows not started fail at once, the batch stays in_progress while its rows run, then fails, and nothing changes after", async () => {
    await f.start()
    const { creator, reader } = await newAccount(f.api())
    const id = await createRunning(creator.api)
    expect((await f.api().admin("POST", `/admin/v1/keys/${creator.id}/revoke`)).status).toBe(200)

    const failing = await pollUntil(reader.api, id, "the waiting rows to fail and the answering row to finish", (s) =>
      s.rows[1].status === "completed" && s.rows[2].status === "failed" && s.rows[3].status === "failed",
    )
    expect(failing.batch).toMatchObject({ status: "in_progress", failed_at: null, error: null, request_counts: { total: 4, completed: 1, failed: 2 } })
    expect(failing.batch.cost_usd).toBeGreaterThan(0)
    expect(failing.rows[0].status).toBe("running")
    for (const row of failing.rows.slice(2)) expect(row).toMatchObject({ status: "failed", response: null, error: { code: "batch_failed" } })
    const atTimeout = (await f.sluice.now()) + TIMEOUT_MS
    // Still running a while later: the batch does not move.
    await new Promise((r) => setTimeout(r, 300))
    expect(await snapshot(reader.api, id)).toEqual(failing)

    await f.sluice.adjust(TIMEOUT_MS)
    const final = await pollUntil(reader.api, id, "the batch to be final", (s) => FINAL.includes(s.batch.status))
    expect(final.batch).toMatchObject({
      status: "failed",
      error: { code: "owner_unauthorized", message: expect.stringMatching(/revoked/) },
      request_counts: { total: 4, completed: 1, failed: 3 },
      cost_usd: failing.batch.cost_usd,
    })
    // Failed when its last row ended, not when the key was revoked.
    expect(final.batch.failed_at).toBeGreaterThanOrEqual(Math.floor(atTimeout / 1000) - 1)
    expect(final.rows[0]).toMatchObject({ status: "failed", response: null, error: { code: "timeout" } })
    expect(final.rows[1]).toEqual(failing.rows[1])
    await staysFinal(f.sluice, reader.api, id, final)
  })

  it("a closed window: the rows not started expire at once, the batch stays in_progress while its rows run, then expires, and nothing changes after", async () => {
    await f.start()
    const { creator: owner } = await newAccount(f.api())
    const id = await createRunning(owner.api)
    const { expires_at } = (await owner.api.call("GET", `/v1/batches/${id}`)).body
    await f.sluice.adjust(24 * HOUR)

    const expiring = await pollUntil(owner.api, id, "the waiting rows to expire and the answering row to finish", (s) =>
      s.rows[1].status === "completed" && s.rows[2].status === "expired" && s.rows[3].status === "expired",
    )
    expect(expiring.batch).toMatchObject({ status: "in_progress", expired_at: null, request_counts: { total: 4, completed: 1, failed: 2 } })
    expect(expiring.rows[0].status).toBe("running")
    for (const row of expiring.rows.slice(2)) expect(row).toMatchObject({ status: "expired", response: null, error: { code: "batch_expired" } })
    await new Promise((r) => setTimeout(r, 300))
    expect(await snapshot(owner.api, id)).toEqual(expiring)

    await f.sluice.adjust(TIMEOUT_MS - 24 * HOUR)
    const final = await pollUntil(owner.api, id, "the batch to be final", (s) => FINAL.includes(s.batch.status))
    expect(final.batch).toMatchObject({ status: "expired", error: null, request_counts: { total: 4, completed: 1, failed: 3 }, cost_usd: expiring.batch.cost_usd })
    // Expired when its last row ended, hours after the window closed.
    expect(final.batch.expired_at).toBeGreaterThanOrEqual(expires_at + (TIMEOUT_MS - 24 * HOUR) / 1000 - 60)
    expect(final.rows[0]).toMatchObject({ status: "failed", error: { code: "timeout" } })
    await staysFinal(f.sluice, owner.api, id, final)
  })
})
