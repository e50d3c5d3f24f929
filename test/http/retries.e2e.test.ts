import { describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { chatRow, client } from "../support/client.js"
import { withSluice } from "../support/withSluice.js"

/*
 * The seed: a timeout, a 429 or a 5xx is retried with backoff, up to eight attempts in all; any
 * other 4xx fails at once; the final error carries the seed's code. Backoff runs on the actors'
 * TestClock, so eight attempts take milliseconds.
 */
describe("retries against the simulator, with backoff on a TestClock", () => {
  const f = withSluice({ inProcess: true, models: (url) => [{ id: "glm-5.3-flash", upstream_url: url, batch_concurrency: 4, timeout_ms: 30_000 }] })
  let seen = 0

  const api = () => f.api()
  const attemptsSince = () => {
    const now = f.sim.stats().received
    const n = now - seen
    seen = now
    return n
  }

  /** Advances the clock a backoff step at a time until the batch is final; no real waiting for backoff. */
  /**
   * Moves the clock one backoff step, but not while a row's request is on its way to or from the
   * simulator (a loaded machine can take longer over that than the steps add up to, and the attempt
   * would time out): only while every running row's request sits at the simulator, hanging.
   */
  const stepWhenNothingIsOnItsWay = async (http: ReturnType<typeof client>, batchId: string) => {
    const running = (await http.allResults(batchId)).filter((r) => r.status === "running").length
    if (running === 0 || f.sim.stats().inFlight >= running) await f.sluice.adjust(5_000)
  }

  const runToEnd = async (batchId: string) => {
    for (let step = 0; step < 400; step++) {
      const batch = await api().call("GET", `/v1/batches/${batchId}`)
      if (["completed", "failed", "expired", "cancelled"].includes(batch.body.status)) return batch.body
      await stepWhenNothingIsOnItsWay(api(), batchId)
      await new Promise((r) => setTimeout(r, 5))
    }
    throw new Error(`batch ${batchId} did not finish`)
  }

  const runOne = async (content: string) => {
    attemptsSince()
    const created = await api().call("POST", "/v1/batches", { requests: [chatRow("only", content)] })
    expect(created.status).toBe(200)
    const batch = await runToEnd(created.body.id)
    const [row] = await api().allResults(created.body.id)
    return { batch, row, attempts: attemptsSince() }
  }

  it.each([
    [429, "rate_limited"],
    [500, "upstream_error"],
    [502, "upstream_error"],
    [503, "service_unavailable"],
    [504, "timeout"],
  ])("a row answered %i every time is attempted eight times, then fails as %s", async (status, code) => {
    const { batch, row, attempts } = await runOne(`always ${status} ${simDirective.status(status)}`)
    expect(attempts).toBe(8)
    expect(row.status).toBe("failed")
    expect(row.response).toBeNull()
    expect(row.error).toMatchObject({ code, status })
    expect(batch.status).toBe("completed")
    expect(batch.request_counts).toEqual({ total: 1, completed: 0, failed: 1 })
  })

  it.each([
    [400, "invalid_request"],
    [422, "invalid_request"],
    [404, "model_not_found"],
    [403, "forbidden"],
  ])("a row answered %i fails at once as %s", async (status, code) => {
    const { row, attempts } = await runOne(`never ${status} ${simDirective.status(status)}`)
    expect(attempts).toBe(1)
    expect(row).toMatchObject({ status: "failed", response: null, error: { code, status } })
  })

  it("a row that fails transiently recovers on a later attempt and keeps only its successful result", async () => {
    const { row, attempts } = await runOne(`twice 503 then fine ${simDirective.fail(3, 503)}`)
    expect(attempts).toBe(4)
    expect(row.status).toBe("completed")
    expect(row.error).toBeNull()
    expect(row.response.body.object).toBe("chat.completion")
  })

  it("a row waiting for its retry is queued, shows its last error, and holds no slot", async () => {
    const created = await api().call("POST", "/v1/batches", {
      requests: [chatRow("flaky", `flaky ${simDirective.fail(1, 429)}`)],
    })
    let row: any
    for (let i = 0; i < 200; i++) {
      ;[row] = await api().allResults(created.body.id)
      if (row.error !== null) break
      await new Promise((r) => setTimeout(r, 10))
    }
    expect(row).toMatchObject({ status: "queued", response: null, error: { code: "rate_limited", status: 429 } })
    expect(f.sim.stats().inFlight).toBe(0)
    const batch = await runToEnd(created.body.id)
    expect(batch.request_counts).toEqual({ total: 1, completed: 1, failed: 0 })
  })

  it("a request that times out is retried, and fails as timeout after eight attempts", async () => {
    attemptsSince()
    const created = await api().call("POST", "/v1/batches", { requests: [chatRow("slow", `hangs ${simDirective.hang}`)] })
    const batch = await runToEnd(created.body.id)
    const [row] = await api().allResults(created.body.id)
    expect(attemptsSince()).toBe(8)
    expect(row).toMatchObject({ status: "failed", error: { code: "timeout" } })
    expect(batch.request_counts.failed).toBe(1)
  })

  it("a reset connection or a truncated answer is retried like a server error", async () => {
    const reset = await runOne(`resets ${simDirective.reset}`)
    expect(reset.attempts).toBe(8)
    expect(reset.row.error.code).toBe("upstream_error")
    const truncated = await runOne(`truncates ${simDirective.truncate}`)
    expect(truncated.attempts).toBe(8)
    expect(truncated.row.error.code).toBe("upstream_error")
  })
})
