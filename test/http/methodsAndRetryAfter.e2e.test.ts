import { describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { chatRow } from "../support/client.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"

/*
 * Two edges of the HTTP contract, against the real server on a TestClock: a known path asked with a
 * method it does not take answers 405 with Allow, and a refused create for too many unfinished
 * batches says when to come back, estimated from the account's batches' progress.
 */

const MODEL = "glm-5.3-flash"
const DAY = 86_400_000

describe("methods and Retry-After", () => {
  const f = withSluice({
    simulator: { models: [MODEL] },
    models: (url) => [{ id: MODEL, upstream_url: url, batch_concurrency: 4, timeout_ms: 2 * DAY }],
    sluice: { env: { SLUICE_MAX_UNFINISHED_BATCHES: "2" }, testClock: {} },
  })
  const api = f.api()

  it.each([
    ["PUT", "/v1/batches", "GET, HEAD, POST"],
    ["DELETE", "/v1/batches", "GET, HEAD, POST"],
    ["POST", "/v1/batches/batch_x", "DELETE, GET, HEAD"],
    ["PATCH", "/v1/batches/batch_x", "DELETE, GET, HEAD"],
    ["GET", "/v1/batches/batch_x/cancel", "POST"],
    ["DELETE", "/v1/batches/batch_x/results", "GET, HEAD"],
    ["POST", "/v1/batches/batch_x/results.jsonl", "GET, HEAD"],
    ["POST", "/v1/batches/batch_x/events", "GET, HEAD"],
    ["GET", "/v1/chat/completions", "POST"],
    ["GET", "/admin/v1/accounts", "POST"],
    ["DELETE", "/admin/v1/accounts/acct", "PATCH"],
    ["GET", "/admin/v1/keys/key_x/revoke", "POST"],
    ["POST", "/openapi.json", "GET, HEAD"],
  ])("%s %s answers 405 with Allow: %s, in the OpenAI envelope", async (method, path, allow) => {
    const answer = await api.call(method, path)
    expect(answer.status).toBe(405)
    expect(answer.headers.get("allow")).toBe(allow)
    expect(answer.body).toEqual({
      error: {
        message: `Method ${method} is not allowed here; this path takes ${allow}`,
        type: "invalid_request_error",
        param: null,
        code: "method_not_allowed",
      },
    })
  })

  it("an unknown path is still 404, and a known path's own methods are served", async () => {
    expect((await api.call("PUT", "/v1/nothing-here")).status).toBe(404)
    expect((await api.call("GET", "/v1/batches")).status).toBe(200)
    expect((await fetch(`${f.sluice.url}/v1/batches`, { method: "HEAD", headers: { authorization: "Bearer hyi-test-bootstrap-key" } })).status).toBe(200)
  })

  it("too many unfinished batches: 429 with Retry-After from the pace of the account's batches, bounded by their windows", async () => {
    // Two of its four rows answer at once, two hang: it has settled half its rows in 100 s of the clock.
    const paced = await api.call("POST", "/v1/batches", {
      requests: [chatRow("a", "quick"), chatRow("b", "quick too"), chatRow("c", `hangs ${simDirective.hang}`), chatRow("d", `hangs ${simDirective.hang}`)],
    })
    // Nothing settled yet: only its window bounds when it finishes.
    const stalled = await api.call("POST", "/v1/batches", { requests: [chatRow("e", `hangs ${simDirective.hang}`)] })
    await waitFor("the paced batch to settle its quick rows", async () =>
      (await api.allResults(paced.body.id)).filter((r) => r.status === "completed").length === 2,
    )
    await waitFor("the stalled batch to run", async () => (await api.allResults(stalled.body.id))[0].status === "running")

    const early = await api.call("POST", "/v1/batches", { requests: [chatRow("f", "one too many")] })
    expect(early.status).toBe(429)
    expect(early.body.error).toMatchObject({ type: "rate_limit_error", code: "too_many_unfinished_batches" })
    // No time has passed on the clock, so no pace is known: a few seconds, as a poll.
    expect(early.headers.get("retry-after")).toBe("5")

    await f.sluice.adjust(100_000)
    const later = await api.call("POST", "/v1/batches", { requests: [chatRow("f", "one too many")] })
    expect(later.status).toBe(429)
    // Two rows left at two rows per 100 s.
    const retryAfter = Number(later.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThanOrEqual(99)
    expect(retryAfter).toBeLessThanOrEqual(102)

    // A window closing sooner than that bounds it: its idle rows expire then.
    await f.sluice.adjust(DAY - 100_000 - 30_000)
    const windowEnds = await api.call("POST", "/v1/batches", { requests: [chatRow("f", "one too many")] })
    expect(windowEnds.status).toBe(429)
    const bound = Number(windowEnds.headers.get("retry-after"))
    expect(bound).toBeGreaterThanOrEqual(29)
    expect(bound).toBeLessThanOrEqual(31)
  })
})
