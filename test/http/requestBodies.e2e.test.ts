import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { chatRow, client } from "../support/client.js"
import { type Sluice, startSluice } from "../support/sluice.js"

const A = "glm-5.3-flash"
const B = "qwen3.6-35b"

/*
 * A model's actor reads the bodies of the rows it takes a range at a time, ahead of the rows it runs.
 * Whatever the order rows are taken in (two models in one batch, two batches at once, retries coming
 * back out of order), each request must reach the model with its own body: the simulator's answer
 * quotes the prompt it was sent.
 */
describe("every row reaches its model with its own request body", () => {
  let sim: Simulator
  let sluice: Sluice
  let api: ReturnType<typeof client>

  beforeAll(async () => {
    sim = await startSimulator({ models: [A, B], latencyMs: 5 })
    sluice = await startSluice({
      models: [
        { id: A, upstream_url: sim.url, batch_concurrency: 8 },
        { id: B, upstream_url: sim.url, batch_concurrency: 3 },
      ],
    })
    api = client(sluice.url)
  })
  afterAll(async () => {
    await sluice?.stop()
    sluice?.cleanup()
    await sim?.close()
  })

  it("for rows of two models interleaved in two batches, some retried", async () => {
    const rows = (batch: string, n: number) =>
      Array.from({ length: n }, (_, i) => {
        // Every 17th row fails once with a 503 and comes back after its backoff, out of order.
        const prompt = `prompt ${batch}-${i} ${i % 17 === 5 ? simDirective.fail(1, 503) : ""}`
        return chatRow(`${batch}-${i}`, prompt, i % 3 === 0 ? B : A)
      })
    const first = await api.call("POST", "/v1/batches", { requests: rows("one", 400) })
    const second = await api.call("POST", "/v1/batches", { requests: rows("two", 150) })
    expect(first.status).toBe(200)
    expect(second.status).toBe(200)
    for (const [created, batch] of [[first, "one"], [second, "two"]] as const) {
      const done = await api.waitFinal(created.body.id, 120_000)
      expect(done.request_counts.failed).toBe(0)
      const results = await api.allResults(created.body.id)
      for (const [i, result] of results.entries()) {
        expect(result.custom_id).toBe(`${batch}-${i}`)
        expect(result.response.body.model).toBe(i % 3 === 0 ? B : A)
        expect(result.response.body.choices[0].message.content).toContain(`prompt ${batch}-${i} `)
      }
    }
    // The retried rows did go round twice: the read-ahead met rows out of order.
    expect(Object.values(sim.stats().answered).reduce((a, b) => a + b, 0)).toBeGreaterThan(550)
  }, 150_000)
})
