import { describe, expect, it } from "vitest"
import { CHARS_PER_TOKEN } from "../../src/sim/Completion.js"
import { simDirective } from "../../src/sim/Directives.js"
import { chatRow } from "../support/client.js"
import { withSluice } from "../support/withSluice.js"

const A = "glm-5.3-flash"
const B = "qwen3.6-35b"

// About 1.5 KiB a row: the 400-row batch spans three rows_added events of the log.
const PADDING = " and so on".repeat(150)
// Over the log's largest message (900 KiB): its rows_added event is stored in parts.
const HUGE = " very long".repeat(100_000)

/*
 * A model's actor reads the bodies of the rows it takes from the batch's rows_added events in the log,
 * one event for the many rows it holds. Whatever the order rows are taken in (two models in one batch,
 * two batches at once, retries coming back out of order, a row in an event stored in parts), each
 * request must reach the model with its own body: the simulator's answer quotes the prompt it was sent.
 */
describe.each(["embedded", "nats"] as const)("every row reaches its model with its own request body (%s log)", (backend) => {
  const f = withSluice({
    log: backend,
    simulator: { models: [A, B], latencyMs: 5 },
    models: (url) => [
      { id: A, upstream_url: url, batch_concurrency: 8 },
      { id: B, upstream_url: url, batch_concurrency: 3 },
    ],
  })
  const api = f.api()

  it("for rows of two models interleaved in two batches, some retried", async () => {
    const promptOf = (batch: string, i: number) => {
      // Every 17th row fails once with a 503 and comes back after its backoff, out of order.
      const pad = batch === "two" && i === 77 ? HUGE : PADDING
      return `prompt ${batch}-${i} ${i % 17 === 5 ? simDirective.fail(1, 503) : ""}${pad}`
    }
    const rows = (batch: string, n: number) =>
      Array.from({ length: n }, (_, i) => chatRow(`${batch}-${i}`, promptOf(batch, i), i % 3 === 0 ? B : A))
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
        // The answer quotes only the prompt's start; its token count shows the whole prompt arrived.
        expect(result.response.body.usage.prompt_tokens).toBe(Math.ceil(promptOf(batch, i).length / CHARS_PER_TOKEN))
      }
    }
    // The retried rows did go round twice: the read-ahead met rows out of order.
    expect(Object.values(f.sim.stats().answered).reduce((a, b) => a + b, 0)).toBeGreaterThan(550)
  }, 150_000)
})
