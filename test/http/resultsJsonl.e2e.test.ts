import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { chatRow, client } from "../support/client.js"
import { BOOTSTRAP_KEY, type Sluice, startSluice } from "../support/sluice.js"

const FAST = "glm-5.3-flash"
const SLOW = "qwen3.6-35b"

interface Jsonl {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

describe("GET /v1/batches/{id}/results.jsonl", () => {
  let sim: Simulator
  let sluice: Sluice
  let api: ReturnType<typeof client>

  beforeAll(async () => {
    sim = await startSimulator({ models: [FAST, SLOW] })
    sluice = await startSluice({
      models: [
        { id: FAST, upstream_url: sim.url, batch_concurrency: 64 },
        // Hanging rows run until this timeout, so a batch of them stays unfinished until cancelled.
        { id: SLOW, upstream_url: sim.url, batch_concurrency: 2, timeout_ms: 2_000 },
      ],
    })
    api = client(sluice.url)
  })
  afterAll(async () => {
    await sluice?.stop()
    sluice?.cleanup()
    await sim?.close()
  })

  const jsonl = async (batchId: string, key = BOOTSTRAP_KEY): Promise<Jsonl> => {
    const response = await fetch(`${sluice.url}/v1/batches/${batchId}/results.jsonl`, {
      headers: { authorization: `Bearer ${key}` },
    })
    return { status: response.status, headers: response.headers, text: await response.text() }
  }

  /** The lines of a JSON Lines body, each of which must end in a newline. */
  const linesOf = (text: string): Array<string> => {
    if (text === "") return []
    expect(text.endsWith("\n")).toBe(true)
    return text.slice(0, -1).split("\n")
  }

  const pages = async (batchId: string, limit: number) => {
    const data: Array<unknown> = []
    let after: string | undefined
    for (;;) {
      const page = await api.call("GET", `/v1/batches/${batchId}/results?limit=${limit}${after ? `&after=${after}` : ""}`)
      expect(page.status).toBe(200)
      data.push(...page.body.data)
      if (!page.body.has_more) return data
      after = page.body.last_id
    }
  }

  const newAccount = async () => {
    const id = `jsonl-${Math.random().toString(36).slice(2, 10)}`
    expect((await api.admin("POST", "/admin/v1/accounts", { id, tier: "internal" })).status).toBe(200)
    return (await api.admin("POST", `/admin/v1/accounts/${id}/keys`, {})).body.key as string
  }

  it("is every results page's data concatenated, one line each, in submission order, for any batch", async () => {
    const outcome = fc.constantFrom<"ok" | "refused" | "missing">("ok", "ok", "ok", "refused", "missing")
    const rowCount = fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 40 }), fc.integer({ min: 990, max: 2_500 }))
    await fc.assert(
      fc.asyncProperty(
        rowCount.chain((n) => fc.tuple(fc.array(outcome, { minLength: n, maxLength: n }), fc.integer({ min: 1, max: 1_000 }))),
        async ([outcomes, limit]) => {
          const run = Math.random().toString(36).slice(2, 8)
          const requests = outcomes.map((o, i) =>
            chatRow(
              `r-${run}-${i}`,
              o === "ok" ? `row ${i}` : `row ${i} ${simDirective.status(o === "refused" ? 400 : 404)}`,
            ),
          )
          const created = await api.call("POST", "/v1/batches", { requests })
          expect(created.status).toBe(200)
          await api.waitFinal(created.body.id, 120_000)

          const answer = await jsonl(created.body.id)
          expect(answer.status).toBe(200)
          expect(answer.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8")
          const lines = linesOf(answer.text)
          const paged = await pages(created.body.id, limit)
          expect(lines).toHaveLength(outcomes.length)
          // Each line is the page item's exact text: the pages splice the same stored JSON.
          expect(lines).toEqual(paged.map((item) => JSON.stringify(item)))
          expect(lines.map((l) => JSON.parse(l))).toEqual(paged)
          expect(paged.map((r: any) => [r.id, r.custom_id, r.status])).toEqual(
            outcomes.map((o, i) => [`batch_req_${i + 1}`, `r-${run}-${i}`, o === "ok" ? "completed" : "failed"]),
          )
        },
      ),
      {
        numRuns: 5,
        examples: [
          [[["ok"], 1]],
          [[Array.from({ length: 2_345 }, (_, i) => (i % 7 === 3 ? "refused" : i % 11 === 5 ? "missing" : "ok")), 999]],
        ],
      },
    )
  })

  it("streams a batch of several thousand rows in chunks, with no Content-Length", async () => {
    const rows = 3_200
    const requests = Array.from({ length: rows }, (_, i) => chatRow(`big-${i}`, `big row ${i} ${"x".repeat(200)}`))
    const created = await api.call("POST", "/v1/batches", { requests })
    await api.waitFinal(created.body.id, 120_000)
    const answer = await jsonl(created.body.id)
    expect(answer.status).toBe(200)
    expect(answer.headers.get("transfer-encoding")).toBe("chunked")
    expect(answer.headers.get("content-length")).toBeNull()
    const lines = linesOf(answer.text).map((l) => JSON.parse(l))
    expect(lines.map((l) => l.id)).toEqual(Array.from({ length: rows }, (_, i) => `batch_req_${i + 1}`))
    expect(lines.every((l) => l.status === "completed" && l.response.status_code === 200)).toBe(true)
    expect(lines).toEqual(await api.allResults(created.body.id))
  })

  it("shows an unfinished batch's pending rows as queued or running", async () => {
    const requests = Array.from({ length: 5 }, (_, i) => chatRow(`hang-${i}`, `wait ${i} ${simDirective.hang}`, SLOW))
    const created = await api.call("POST", "/v1/batches", { requests })
    const id = created.body.id
    let lines: Array<any> = []
    // Both slots of the slow model fill as soon as the dispatcher starts the batch.
    for (let tries = 0; tries < 200; tries++) {
      lines = linesOf((await jsonl(id)).text).map((l) => JSON.parse(l))
      if (lines.filter((l) => l.status === "running").length === 2) break
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(lines.map((l) => [l.id, l.custom_id])).toEqual(requests.map((r, i) => [`batch_req_${i + 1}`, r.custom_id]))
    expect(lines.map((l) => l.status).sort()).toEqual(["queued", "queued", "queued", "running", "running"])
    for (const line of lines) expect([line.response, line.error]).toEqual([null, null])

    expect((await api.call("POST", `/v1/batches/${id}/cancel`)).status).toBe(200)
    await api.waitFinal(id)
    const settled = linesOf((await jsonl(id)).text).map((l) => JSON.parse(l))
    expect(settled.map((l) => l.status)).toEqual(Array.from({ length: 5 }, () => "cancelled"))
    expect(settled).toEqual(await api.allResults(id))
  })

  it("answers 404 for an unknown batch and for another account's, and 401 without a key", async () => {
    const created = await api.call("POST", "/v1/batches", { requests: [chatRow("mine", "mine")] })
    const unknown = await jsonl("batch_0123456789abcdef0123456789abcdef")
    expect(unknown.status).toBe(404)
    expect(JSON.parse(unknown.text)).toEqual({
      error: {
        message: "No batch found with id 'batch_0123456789abcdef0123456789abcdef'",
        type: "invalid_request_error",
        param: null,
        code: "batch_not_found",
      },
    })
    const other = await jsonl(created.body.id, await newAccount())
    expect(other.status).toBe(404)
    expect(JSON.parse(other.text).error.code).toBe("batch_not_found")
    const anonymous = await fetch(`${sluice.url}/v1/batches/${created.body.id}/results.jsonl`)
    expect(anonymous.status).toBe(401)
    expect(((await anonymous.json()) as any).error.type).toBe("authentication_error")
  })
})
