import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { catalogModels, corruption, validBatch } from "../domain/arbitraries/createBatch.js"
import { chatRow } from "../support/client.js"
import { BOOTSTRAP_KEY } from "../support/sluice.js"
import { withSluice } from "../support/withSluice.js"

/** Properties of the public API, each run against one real server and simulator over loopback. */
describe("API properties over HTTP", () => {
  const f = withSluice({
    simulator: { models: [...catalogModels] },
    models: (url) => catalogModels.map((id) => ({ id, upstream_url: url, batch_concurrency: 16 })),
  })
  const api = f.api()

  const newAccount = async () => {
    const id = `p-${Math.random().toString(36).slice(2, 10)}`
    await api.admin("POST", "/admin/v1/accounts", { id, tier: "internal" })
    return f.api((await api.admin("POST", `/admin/v1/accounts/${id}/keys`, {})).body.key)
  }

  it("any single invalid row is named in the 400, and nothing is stored", async () => {
    const account = await newAccount()
    await fc.assert(
      fc.asyncProperty(
        validBatch(12).chain((batch) =>
          fc.tuple(fc.constant(batch), fc.nat({ max: batch.requests.length - 1 }), corruption),
        ),
        async ([batch, at, broken]) => {
          const requests = batch.requests.map((row, i) => (i === at ? broken.apply(row) : row))
          const answer = await account.call("POST", "/v1/batches", { ...batch, requests })
          expect(answer.status).toBe(400)
          expect(answer.body.error.message).toContain(`requests[${at}]`)
          expect(answer.body.error.message).toContain(broken.detail)
          expect(answer.body.error.param).toBe(`requests[${at}]${broken.param}`)
          expect((await account.call("GET", "/v1/batches")).body.data).toEqual([])
        },
      ),
      { numRuns: 40 },
    )
  })

  it("valid batches are stored whole: every custom_id comes back once, in submission order", async () => {
    const account = await newAccount()
    await fc.assert(
      fc.asyncProperty(validBatch(25), async (batch) => {
        const created = await account.call("POST", "/v1/batches", batch)
        expect(created.status).toBe(200)
        expect(created.body.request_counts.total).toBe(batch.requests.length)
        const rows = await account.allResults(created.body.id, 7)
        expect(rows.map((r) => r.custom_id)).toEqual(batch.requests.map((r) => r["custom_id"]))
        // An account holds ten unfinished batches at most: fifteen runs (and a shrink's reruns) must not
        // depend on how fast the earlier ones finish, which a loaded CI machine once made them not do.
        await account.waitFinal(created.body.id)
      }),
      { numRuns: 15 },
    )
  })

  it("result pages of any size concatenate to the whole result list in submission order", async () => {
    const account = await newAccount()
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 150 }),
        fc.integer({ min: 1, max: 60 }),
        fc.boolean(),
        async (size, limit, waitForIt) => {
          const ids = Array.from({ length: size }, (_, i) => `row-${size}-${i}`)
          const created = await account.call("POST", "/v1/batches", { requests: ids.map((id) => chatRow(id, id)) })
          if (waitForIt) await account.waitFinal(created.body.id)
          const pages: Array<any> = []
          let after: string | undefined
          for (;;) {
            const page = await account.call("GET", `/v1/batches/${created.body.id}/results?limit=${limit}${after ? `&after=${after}` : ""}`)
            expect(page.status).toBe(200)
            pages.push(page.body)
            if (!page.body.has_more) break
            after = page.body.last_id
          }
          const rows = pages.flatMap((p) => p.data)
          expect(rows.map((r) => r.custom_id)).toEqual(ids)
          expect(rows.map((r) => r.id)).toEqual(ids.map((_, i) => `batch_req_${i + 1}`))
          expect(pages.length).toBe(Math.ceil(size / limit))
          for (const page of pages) {
            expect(page.data.length).toBeLessThanOrEqual(limit)
            expect(page.first_id).toBe(page.data[0].id)
            expect(page.last_id).toBe(page.data[page.data.length - 1].id)
          }
          for (const row of rows) {
            if (row.status === "queued" || row.status === "running") expect(row.response).toBeNull()
            else expect(row.status).toBe("completed")
          }
        },
      ),
      { numRuns: 15 },
    )
  })

  it("batch list pages of any size concatenate to every batch of the account, newest first", async () => {
    const account = await newAccount()
    const made: Array<string> = []
    for (let i = 0; i < 13; i++) made.push((await account.call("POST", "/v1/batches", { requests: [chatRow("a", `${i}`)] })).body.id)
    const newestFirst = [...made].reverse()
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 15 }), async (limit) => {
        const seen: Array<string> = []
        let after: string | undefined
        for (;;) {
          const page = await account.call("GET", `/v1/batches?limit=${limit}${after ? `&after=${after}` : ""}`)
          expect(page.status).toBe(200)
          expect(page.body.object).toBe("list")
          seen.push(...page.body.data.map((b: any) => b.id))
          if (!page.body.has_more) break
          after = page.body.last_id
        }
        expect(seen).toEqual(newestFirst)
      }),
      { numRuns: 10 },
    )
    const firstPage = await account.call("GET", "/v1/batches")
    expect(firstPage.body.data.length).toBe(13)
    expect((await f.api(BOOTSTRAP_KEY).call("GET", "/v1/batches")).body.data.map((b: any) => b.id)).not.toContain(made[0])
  })
})
