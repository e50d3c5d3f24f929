import Database from "better-sqlite3"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import type { BatchUsage } from "../../src/domain/api/BatchObject.js"
import { SluiceClient } from "../../src/sdk/index.js"
import { simDirective } from "../../src/sim/Directives.js"
import { runCli } from "../support/cli.js"
import { chatRow, type client } from "../support/client.js"
import { runToEnd } from "../support/processRun.js"
import { json, type Reply, startScriptedServer } from "../support/scriptedServer.js"
import { BOOTSTRAP_KEY } from "../support/sluice.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"

/*
 * A batch's `usage`: the tokens of its completed rows, driven through the public API on both logs,
 * with Sluice's actors on a TestClock. The simulator reports prompt and completion tokens only; a
 * second model's upstream, a scripted server with one slot, also reports cached and reasoning tokens,
 * and holds its answer to a prompt marked HOLD until the test releases it. Every check reads the
 * rows' usage back from the batch's results and sums it here.
 */

const SIM = "glm-5.3-flash"
const DETAILED = "detailed"
const HOLD = "[hold]"
const CACHED = 64
const FINAL = ["completed", "failed", "expired", "cancelled"]
const HOUR = 3_600_000
// Longer than any test moves the clock before a batch is final: no row times out.
const TIMEOUT_MS = 12 * HOUR

type Api = ReturnType<typeof client>

/** A chat completion whose usage has both details, its counts from the prompt's length; held ones wait in `held`. */
const detailedUpstream = (held: Array<() => void>): Reply => (res, req) => {
  if (!req.url.endsWith("/chat/completions")) {
    res.writeHead(404).end()
    return
  }
  const body = JSON.parse(req.body) as { model: string; messages: Array<{ content: string }> }
  const content = body.messages[body.messages.length - 1]!.content
  const n = content.length
  const answer = json(200, {
    id: `chatcmpl-${n}`,
    object: "chat.completion",
    created: 1_800_000_000,
    model: body.model,
    choices: [{ index: 0, message: { role: "assistant", content: "thought about it" }, finish_reason: "stop" }],
    usage: {
      prompt_tokens: 100 + n,
      completion_tokens: 30 + n,
      total_tokens: 130 + 2 * n,
      prompt_tokens_details: { cached_tokens: CACHED },
      completion_tokens_details: { reasoning_tokens: 10 + n },
    },
  })
  if (content.includes(HOLD)) held.push(() => answer(res, req))
  else answer(res, req)
}

const zeros: BatchUsage = {
  input_tokens: 0,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 0,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 0,
}

/** The completed result lines' usage, summed as OpenAI's batch usage counts it; failed and unfinished rows have none. */
const usageOf = (rows: ReadonlyArray<any>): BatchUsage => {
  const sum = structuredClone(zeros) as { -readonly [K in keyof BatchUsage]: any }
  for (const row of rows) {
    if (row.status !== "completed") continue
    const u = row.response.body.usage
    sum.input_tokens += u.prompt_tokens
    sum.input_tokens_details.cached_tokens += u.prompt_tokens_details?.cached_tokens ?? 0
    sum.output_tokens += u.completion_tokens
    sum.output_tokens_details.reasoning_tokens += u.completion_tokens_details?.reasoning_tokens ?? 0
    sum.total_tokens += u.total_tokens
  }
  return sum
}

/** The batch and its rows as of one moment: read again until the batch did not move while its rows were read. */
const snapshot = async (api: Api, id: string) => {
  for (;;) {
    const before = await api.call("GET", `/v1/batches/${id}`)
    expect(before.status, before.text).toBe(200)
    const rows = await api.allResults(id)
    const after = await api.call("GET", `/v1/batches/${id}`)
    if (JSON.stringify(after.body) === JSON.stringify(before.body)) return { batch: before.body, rows }
  }
}

const logs = [
  { name: "the embedded log", log: "embedded" },
  { name: "NATS JetStream", log: "nats" },
] as const

describe.each(logs)("a batch's token totals, on $name", ({ log }) => {
  let upstream: Awaited<ReturnType<typeof startScriptedServer>> | undefined
  const held: Array<() => void> = []
  const dirs: Array<string> = []
  const f = withSluice({
    log,
    lifetime: "test",
    simulator: { models: [SIM] },
    models: async (simUrl) => {
      upstream = await startScriptedServer([detailedUpstream(held)])
      return [
        { id: SIM, upstream_url: simUrl, batch_concurrency: 4, timeout_ms: TIMEOUT_MS },
        { id: DETAILED, upstream_url: `${upstream.url}/v1`, batch_concurrency: 1, timeout_ms: TIMEOUT_MS },
      ]
    },
    sluice: { testClock: {} },
  })
  afterEach(async () => {
    for (const release of held.splice(0)) release()
    await f.stop()
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })
  afterAll(() => upstream?.close())

  /** A data directory of the test's own, kept across restarts. */
  const dataDir = () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-tokens-"))
    dirs.push(dir)
    return dir
  }
  const nonce = () => Math.random().toString(36).slice(2, 10)

  /** Polls until the batch is final, moving the actors' clock on so that backoffs run; every poll's usage is its completed rows'. */
  const runToFinal = async (api: Api, id: string) => {
    let last: Awaited<ReturnType<typeof snapshot>> | undefined
    await waitFor(`batch ${id} to be final`, async () => {
      last = await snapshot(api, id)
      expect(last.batch.usage).toEqual(usageOf(last.rows))
      if (FINAL.includes(last.batch.status)) return true
      await f.sluice.adjust(5_000)
      return false
    })
    return last!
  }

  const create = async (api: Api, requests: ReadonlyArray<ReturnType<typeof chatRow>>) => {
    const created = await api.call("POST", "/v1/batches", { requests })
    expect(created.status, created.text).toBe(200)
    return created.body
  }

  it("is the sum of the completed rows' usage read from the results, the upstream's details included; failed rows add nothing", async () => {
    await f.start()
    const api = f.api()
    const n = nonce()
    const created = await create(api, [
      chatRow("short", `short ${n} ${simDirective.tokens(5)}`),
      chatRow("long", `long ${n} ${simDirective.tokens(80)}`),
      chatRow("plain", `a plain question ${n}`),
      chatRow("fails-once", `fails once then answers ${n} ${simDirective.fail(1, 503)}`),
      chatRow("refused", `refused ${n} ${simDirective.status(400)}`),
      chatRow("refused-too", `refused too ${n} ${simDirective.status(400)}`),
      chatRow("detailed-1", `detailed ${n}`, DETAILED),
      chatRow("detailed-2", `detailed, a longer one ${n}`, DETAILED),
    ])
    expect(created.status).toBe("validating")
    expect(created.usage).toEqual(zeros)

    const { batch, rows } = await runToFinal(api, created.id)
    expect(batch.status).toBe("completed")
    expect(batch.request_counts).toEqual({ total: 8, completed: 6, failed: 2 })
    expect(rows.filter((r) => r.status === "failed").map((r) => r.response)).toEqual([null, null])
    expect(batch.usage).toEqual(usageOf(rows))
    expect(batch.usage.input_tokens_details.cached_tokens).toBe(2 * CACHED)
    // Reasoning from the detailed rows only: the simulator reports none.
    expect(batch.usage.output_tokens_details.reasoning_tokens).toBe(usageOf(rows.filter((r) => r.custom_id.startsWith("detailed"))).output_tokens_details.reasoning_tokens)
    expect(batch.usage.output_tokens_details.reasoning_tokens).toBeGreaterThan(0)
    expect(batch.usage.total_tokens).toBe(batch.usage.input_tokens + batch.usage.output_tokens)

    // The same in the list, in `sluice batch get` and through the SDK.
    const listed = (await api.call("GET", "/v1/batches?limit=100")).body.data.find((b: { id: string }) => b.id === created.id)
    expect(listed.usage).toEqual(batch.usage)
    const config = join(dataDir(), "credentials.json")
    const got = await runCli(["batch", "get", "--batch-id", created.id], {
      SLUICE_CONFIG: config,
      SLUICE_BASE_URL: `${f.sluice.url}/v1`,
      SLUICE_API_KEY: BOOTSTRAP_KEY,
    })
    expect(got.code, got.stderr).toBe(0)
    expect(JSON.parse(got.stdout).usage).toEqual(batch.usage)
    const sdk = new SluiceClient({ apiKey: BOOTSTRAP_KEY, baseUrl: `${f.sluice.url}/v1` })
    const usage: BatchUsage = (await sdk.getBatch(created.id)).usage
    expect(usage).toEqual(batch.usage)
  })

  it("once final it stays as it was: a row that finishes while the batch is cancelling counts, the rows cancelled add nothing, and nothing after changes it", async () => {
    await f.start()
    const api = f.api()
    const n = nonce()
    const created = await create(api, [
      chatRow("quick", `quick ${n}`),
      chatRow("held", `held ${n} ${HOLD}`, DETAILED),
      chatRow("waits-1", `waits ${n}`, DETAILED),
      chatRow("waits-2", `waits too ${n}`, DETAILED),
    ])
    await waitFor("the quick row to complete while the held one runs", async () => {
      const now = await snapshot(api, created.id)
      expect(now.batch.usage).toEqual(usageOf(now.rows))
      return now.rows[0].status === "completed" && now.rows[1].status === "running" && held.length === 1
    })
    const cancelled = await api.call("POST", `/v1/batches/${created.id}/cancel`)
    expect(cancelled.status, cancelled.text).toBe(200)
    const cancelling = await snapshot(api, created.id)
    expect(cancelling.batch.status).toBe("cancelling")
    expect(cancelling.rows.map((r) => r.status)).toEqual(["completed", "running", "cancelled", "cancelled"])
    expect(cancelling.batch.usage).toEqual(usageOf(cancelling.rows))
    expect(cancelling.batch.usage.total_tokens).toBeGreaterThan(0)

    held.shift()!()
    const final = await runToFinal(api, created.id)
    expect(final.batch.status).toBe("cancelled")
    expect(final.rows.map((r) => r.status)).toEqual(["completed", "completed", "cancelled", "cancelled"])
    expect(final.batch.usage).toEqual(usageOf(final.rows))
    expect(final.batch.usage.input_tokens_details.cached_tokens).toBe(CACHED)

    for (let i = 0; i < 3; i++) {
      await f.sluice.adjust(HOUR)
      await new Promise((r) => setTimeout(r, 100))
      expect(await snapshot(api, created.id)).toEqual(final)
    }
    const again = await api.call("POST", `/v1/batches/${created.id}/cancel`)
    expect(again.body.usage).toEqual(final.batch.usage)
    expect(await snapshot(api, created.id)).toEqual(final)
  })

  it("is the same after a restart, after the read model is rebuilt from the log, after a read model of the older layout is upgraded, and in npm run replay", async () => {
    const dir = dataDir()
    await f.start({ dataDir: dir })
    const api = f.api()
    const n = nonce()
    const created = await create(api, [
      chatRow("a", `first ${n} ${simDirective.tokens(17)}`),
      chatRow("b", `second ${n}`),
      chatRow("refused", `refused ${n} ${simDirective.status(400)}`),
      chatRow("detailed", `detailed ${n}`, DETAILED),
    ])
    const { batch } = await runToFinal(api, created.id)
    expect(batch.usage.total_tokens).toBeGreaterThan(0)
    expect(batch.usage.input_tokens_details.cached_tokens).toBe(CACHED)

    const readModel = () => readdirSync(dir).filter((name) => /^read\.[a-z]+\.sqlite/.test(name) && !name.includes("rebuild"))
    /** Stops Sluice, changes its data directory, starts it again where its clock stood, and reads the batch once final. */
    const restarted = async (change: () => void) => {
      const startMs = await f.sluice.now()
      await f.sluice.stop()
      change()
      await f.start({ dataDir: dir, testClock: { startMs } })
      let read: any
      await waitFor("the batch to be read final again", async () => {
        read = (await api.call("GET", `/v1/batches/${created.id}`)).body
        return FINAL.includes(read?.status)
      })
      return read
    }

    expect(await restarted(() => {})).toEqual(batch)
    expect(await restarted(() => readModel().forEach((name) => rmSync(join(dir, name))))).toEqual(batch)
    const olderLayout = () => {
      const [file] = readModel().filter((name) => name.endsWith(".sqlite"))
      const db = new Database(join(dir, file!))
      for (const column of ["input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens", "total_tokens"]) {
        db.exec(`ALTER TABLE batches DROP COLUMN ${column}`)
      }
      db.pragma("user_version = 4")
      db.close()
    }
    expect(await restarted(olderLayout)).toEqual(batch)

    await f.sluice.stop()
    const env: Record<string, string> = { ...(process.env as Record<string, string>), SLUICE_DATA_DIR: dir }
    delete env.NATS_URL
    if (f.natsUrl !== undefined) env.NATS_URL = f.natsUrl
    const replay = await runToEnd(process.execPath, ["bin/replay.mjs"], { env })
    expect(replay.stdout, replay.stderr).toMatch(/^result\s+equal/m)
    expect(replay.code).toBe(0)
  })
})
