import { execFileSync } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chatRow, client } from "../support/client.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"
import { BOOTSTRAP_KEY, type Sluice, startSluice } from "../support/sluice.js"

// The seed document's own create example, verbatim.
const seedCreate = {
  requests: [
    chatRow("q-1", "Summarize the plot of Hamlet in two sentences."),
    chatRow("q-2", 'Translate "good morning" into French.', "qwen3.6-35b", { max_tokens: 50 }),
  ],
  metadata: { project: "eval-42" },
}

/** The seed's script needs `requests`: Debian's python3-requests provides it for /usr/bin/python3. */
const pythonWithRequests = () => {
  for (const python of ["python3", "/usr/bin/python3"]) {
    try {
      execFileSync(python, ["-c", "import requests"], { stdio: "ignore" })
      return python
    } catch {
      // try the next interpreter
    }
  }
  throw new Error("no python3 with the requests module: apt-get install python3-requests")
}

const batchObjectKeys = [
  "id", "object", "endpoint", "errors", "input_file_id", "completion_window", "status", "output_file_id",
  "error_file_id", "created_at", "in_progress_at", "expires_at", "finalizing_at", "completed_at", "failed_at",
  "expired_at", "cancelling_at", "cancelled_at", "request_counts", "metadata", "cost_usd", "error",
  // Sluice's additions, after the seed's fields.
  "rerun_of", "priority", "rows_ahead", "estimated_completion_at", "usage", "waiting_on",
]

describe.each(["embedded", "nats"] as const)("the seed's examples on the %s event log, default catalog", (backend) => {
  let nats: NatsServer | undefined
  let sluice: Sluice
  const start = async (dataDir?: string) =>
    startSluice({ ...(nats === undefined ? {} : { natsUrl: nats.url }), ...(dataDir === undefined ? {} : { dataDir }) })

  beforeAll(async () => {
    if (backend === "nats") nats = await startNatsServer()
    sluice = await start()
  })
  afterAll(async () => {
    await sluice?.stop()
    sluice?.cleanup()
    await nats?.stop()
  })

  it("creates the seed's batch as validating, runs it to completed and lists both chat completions", async () => {
    const api = client(sluice.url)
    const created = await api.call("POST", "/v1/batches", seedCreate)
    expect(created.status, created.text).toBe(200)
    expect(Object.keys(created.body)).toEqual(batchObjectKeys)
    expect(created.body).toMatchObject({
      object: "batch",
      endpoint: "/v1/chat/completions",
      errors: null,
      input_file_id: null,
      output_file_id: null,
      error_file_id: null,
      completion_window: "24h",
      status: "validating",
      in_progress_at: null,
      finalizing_at: null,
      request_counts: { total: 2, completed: 0, failed: 0 },
      metadata: { project: "eval-42" },
      cost_usd: 0,
      error: null,
    })
    expect(created.body.id).toMatch(/^batch_[0-9a-f]{32}$/)
    expect(created.body.expires_at - created.body.created_at).toBe(24 * 3600)

    const done = await api.waitFinal(created.body.id)
    expect(done.status).toBe("completed")
    expect(done.request_counts).toEqual({ total: 2, completed: 2, failed: 0 })
    expect(done.completed_at).toBeGreaterThanOrEqual(done.created_at)
    expect(done.cost_usd).toBeGreaterThan(0)

    const page = await api.call("GET", `/v1/batches/${created.body.id}/results?limit=100`)
    expect(page.status).toBe(200)
    expect(page.body.has_more).toBe(false)
    expect(page.body.data.map((r: any) => [r.custom_id, r.status, r.error])).toEqual([
      ["q-1", "completed", null],
      ["q-2", "completed", null],
    ])
    expect(page.body.first_id).toBe(page.body.data[0].id)
    expect(page.body.last_id).toBe(page.body.data[1].id)
    for (const [i, row] of page.body.data.entries()) {
      expect(row.response.status_code).toBe(200)
      expect(row.response.request_id).toMatch(/^req_/)
      expect(row.response.body.object).toBe("chat.completion")
      expect(row.response.body.model).toBe(seedCreate.requests[i]!.body.model)
      expect(row.response.body.choices[0].message.content).toContain(seedCreate.requests[i]!.body.messages[0]!.content)
    }
  })

  it("runs the seed's Python script to the end against it", () => {
    const script = execFileSync(pythonWithRequests(), ["test/support/seedScript.py"], {
      env: { ...process.env, FREEINFERENCE_API_KEY: BOOTSTRAP_KEY, SLUICE_API: `${sluice.url}/v1`, POLL_SECONDS: "0.2" },
      encoding: "utf8",
      timeout: 60_000,
    })
    expect(script.trim().split("\n")).toEqual([
      "q-0 Simulated answer to: Summarize the plot of Hamlet in two sentences.",
      "q-1 Simulated answer to: Name three prime numbers.",
    ])
  })

  it("keeps every batch and result across a restart, and runs new batches after it", async () => {
    const api = client(sluice.url)
    const before = (await api.call("GET", "/v1/batches?limit=100")).body.data
    const results = await Promise.all(before.map((b: any) => api.allResults(b.id)))
    expect(await sluice.stop("SIGTERM"), sluice.output()).toBe(0)
    sluice = await start(sluice.dataDir)
    const again = client(sluice.url)
    expect((await again.call("GET", "/v1/batches?limit=100")).body.data).toEqual(before)
    expect(await Promise.all(before.map((b: any) => again.allResults(b.id)))).toEqual(results)
    const created = await again.call("POST", "/v1/batches", seedCreate)
    expect((await again.waitFinal(created.body.id)).status).toBe("completed")
  })
})
