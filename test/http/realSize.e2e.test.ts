import { describe, expect, it } from "vitest"
import { withSluice } from "../support/withSluice.js"

/** The real size: 50,000 rows in one create, and a single row far over the log's 1 MiB message limit. */
describe.each(["embedded", "nats"] as const)("batches at the real size on the %s event log", (backend) => {
  const f = withSluice({ log: backend, models: (url) => [{ id: "glm-5.3-flash", upstream_url: url, batch_concurrency: 64 }] })
  const api = f.api()

  it("takes 50,000 rows in one create and answers every one of them", async () => {
    const requests = Array.from({ length: 50_000 }, (_, i) => ({
      custom_id: `row-${i}`,
      body: { model: "glm-5.3-flash", messages: [{ role: "user", content: `question ${i} ${"lorem ipsum ".repeat(40)}` }], max_tokens: 8 },
    }))
    const body = JSON.stringify({ requests })
    expect(body.length).toBeGreaterThan(25 * 1024 * 1024)
    const created = await api.call("POST", "/v1/batches", body)
    expect(created.status).toBe(200)
    expect(created.body.request_counts.total).toBe(50_000)
    const done = await api.waitFinal(created.body.id, 300_000)
    expect(done.status).toBe("completed")
    expect(done.request_counts).toEqual({ total: 50_000, completed: 50_000, failed: 0 })
    const rows = await api.allResults(created.body.id)
    expect(rows.length).toBe(50_000)
    expect(rows.every((r, i) => r.custom_id === `row-${i}` && r.status === "completed")).toBe(true)
    // A whole 50,000-row run is a load, not a timing goal: the limit is only a safety net (see npm run bench).
  }, 300_000)

  it("runs a single 20 MiB row, though no log message may exceed 1 MiB", async () => {
    const content = "a".repeat(20 * 1024 * 1024)
    const created = await api.call("POST", "/v1/batches", {
      requests: [{ custom_id: "huge", body: { model: "glm-5.3-flash", messages: [{ role: "user", content }], max_tokens: 4 } }],
    })
    expect(created.status).toBe(200)
    expect((await api.waitFinal(created.body.id)).status).toBe("completed")
    const [row] = await api.allResults(created.body.id)
    expect(row.status).toBe("completed")
    expect(row.response.body.usage.prompt_tokens).toBeGreaterThan(5_000_000)
  })
})
