import { beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { chatRow } from "../support/client.js"
import { withSluice } from "../support/withSluice.js"

/** The results pages' `status` and `error_code` filters, and one result with its request: the console's reads. */
describe("filtered results and one result with its request", () => {
  const f = withSluice({ inProcess: true, models: (url) => [{ id: "glm-5.3-flash", upstream_url: url, batch_concurrency: 4 }] })
  const api = () => f.api()
  let batchId: string

  beforeAll(async () => {
    const rows = Array.from({ length: 12 }, (_, i) =>
      chatRow(`q${i}`, i % 4 === 1 ? `bad ${i} ${simDirective.status(404)}` : i % 4 === 2 ? `bad ${i} ${simDirective.status(400)}` : `ok ${i}`),
    )
    batchId = (await api().call("POST", "/v1/batches", { requests: rows })).body.id
    await api().waitFinal(batchId)
  })

  const page = (query: string) => api().call("GET", `/v1/batches/${batchId}/results?${query}`)

  it("lists only the rows in a status, pages of them concatenating to all of them", async () => {
    const failed = await page("status=failed")
    expect(failed.body.data.map((r: { custom_id: string }) => r.custom_id)).toEqual(["q1", "q2", "q5", "q6", "q9", "q10"])
    const first = await page("status=failed&limit=4")
    expect(first.body.has_more).toBe(true)
    const rest = await page(`status=failed&limit=4&after=${first.body.last_id}`)
    expect(rest.body.has_more).toBe(false)
    expect([...first.body.data, ...rest.body.data]).toEqual(failed.body.data)
    expect((await page("status=completed")).body.data).toHaveLength(6)
  })

  it("lists only the rows with an error code, alone or with a status", async () => {
    const notFound = await page("error_code=model_not_found")
    expect(notFound.body.data.map((r: { custom_id: string }) => r.custom_id)).toEqual(["q1", "q5", "q9"])
    expect((await page("status=completed&error_code=model_not_found")).body.data).toEqual([])
  })

  it("refuses a status or code it does not know, naming the parameter", async () => {
    const bad = await page("status=done")
    expect(bad.status).toBe(400)
    expect(bad.body.error).toMatchObject({ param: "status", type: "invalid_request_error" })
    expect(bad.body.error.message).toContain("'status' must be one of")
    const code = await page("error_code=Not%20A%20Code")
    expect(code.status).toBe(400)
    expect(code.body.error.param).toBe("error_code")
  })

  it("answers one result with the request it answers, and 404 for a result the batch does not have", async () => {
    const one = await api().call("GET", `/v1/batches/${batchId}/results/batch_req_3`)
    expect(one.status).toBe(200)
    expect(one.body).toMatchObject({
      id: "batch_req_3",
      custom_id: "q2",
      status: "failed",
      error: { code: "invalid_request" },
      request: { custom_id: "q2", method: "POST", url: "/v1/chat/completions", body: { model: "glm-5.3-flash" } },
    })
    expect(one.body.request.body.messages[0].content).toContain("bad 2")
    for (const missing of ["batch_req_13", "batch_req_0", "nope"]) {
      const answer = await api().call("GET", `/v1/batches/${batchId}/results/${missing}`)
      expect(answer.status).toBe(404)
      expect(answer.body.error.type).toBe("invalid_request_error")
    }
  })
})
