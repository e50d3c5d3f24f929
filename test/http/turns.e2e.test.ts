import { describe, expect, it } from "vitest"
import { chatRow } from "../support/client.js"
import { storedEvents } from "../support/storedEvents.js"
import { withSluice } from "../support/withSluice.js"

/** Batches take turns, through the public API: a model's slots are shared by account, then by batch. */
describe("batches take turns on a model", () => {
  const f = withSluice({ simulator: { latencyMs: 25 }, models: (url) => [{ id: "glm-5.3-flash", upstream_url: url, batch_concurrency: 2 }] })
  const api = f.api()

  const rows = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => chatRow(`${prefix}-${i}`, `${prefix} ${i}`))
  const newAccount = async () => {
    const id = `t-${Math.random().toString(36).slice(2, 10)}`
    await api.admin("POST", "/admin/v1/accounts", { id, tier: "internal" })
    return f.api((await api.admin("POST", `/admin/v1/accounts/${id}/keys`, {})).body.key)
  }

  it("a small batch submitted after a large one finishes while the large one is still mostly queued", async () => {
    const big = await api.call("POST", "/v1/batches", { requests: rows("big", 300) })
    const small = await api.call("POST", "/v1/batches", { requests: rows("small", 4) })
    const done = await api.waitFinal(small.body.id)
    expect(done.status).toBe("completed")
    const bigNow = (await api.call("GET", `/v1/batches/${big.body.id}`)).body
    expect(bigNow.request_counts.completed).toBeLessThan(60)
    await api.call("POST", `/v1/batches/${big.body.id}/cancel`)
    await api.waitFinal(big.body.id)
  })

  it("an account with three batches gets the share of an account with one, not three times it", async () => {
    const many = await newAccount()
    const one = await newAccount()
    const manyIds: Array<string> = []
    for (const b of ["a", "b", "c"]) manyIds.push((await many.call("POST", "/v1/batches", { requests: rows(b, 60) })).body.id)
    const oneId = (await one.call("POST", "/v1/batches", { requests: rows("solo", 60) })).body.id
    await one.waitFinal(oneId)
    // Judged in the log's order, from the single batch's first start to its last completion: the other
    // account's head start while it was created, and the rows it ran while the test read, are not counted.
    const where = { dataDir: f.sluice.dataDir, natsUrl: f.natsUrl }
    const solo = await storedEvents(where, oneId)
    const from = Math.min(...solo.filter((e) => e.type === "row_started").map((e) => e.seq))
    const until = Math.max(...solo.filter((e) => e.type === "row_completed").map((e) => e.seq))
    const manyEvents = (await Promise.all(manyIds.map((id) => storedEvents(where, id)))).flat()
    const manyCompleted = manyEvents.filter((e) => e.type === "row_completed" && e.seq > from && e.seq < until).length
    // Turns by account: while the single batch ran its 60 rows, the other account ran about as many
    // in all (its three batches sharing its turns), not about three times as many.
    expect(manyCompleted).toBeLessThanOrEqual(60 + 10)
    expect(manyCompleted).toBeGreaterThanOrEqual(60 - 10)
    for (const id of manyIds) await many.call("POST", `/v1/batches/${id}/cancel`)
  })
})
