import { describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { chatRow } from "../support/client.js"
import { BOOTSTRAP_KEY } from "../support/sluice.js"
import { withSluice } from "../support/withSluice.js"

/** Every row of the seed's Errors table that belongs to the six batch endpoints, sent over HTTP. */
describe("the seed's Errors table", () => {
  const f = withSluice({
    models: (url) => [
      { id: "glm-5.3-flash", upstream_url: url, batch_concurrency: 4 },
      { id: "qwen3.6-35b", upstream_url: url, batch_concurrency: 4 },
      { id: "secret-model", upstream_url: url },
    ],
  })
  const api = f.api()

  const expectError = (answer: { status: number; body: any }, status: number, message: string | RegExp) => {
    expect(answer.status).toBe(status)
    expect(Object.keys(answer.body)).toEqual(["error"])
    expect(Object.keys(answer.body.error)).toEqual(["message", "type", "param", "code"])
    if (typeof message === "string") expect(answer.body.error.message).toBe(message)
    else expect(answer.body.error.message).toMatch(message)
  }

  /** Bad input changes nothing: the account's list is the same after the refused create. */
  const refusedCreate = async (body: unknown, status: number, message: string | RegExp, key = BOOTSTRAP_KEY) => {
    const before = await f.api(key).call("GET", "/v1/batches?limit=100")
    const answer = await f.api(key).call("POST", "/v1/batches", body)
    expectError(answer, status, message)
    const after = await f.api(key).call("GET", "/v1/batches?limit=100")
    expect(after.body).toEqual(before.body)
    return answer
  }

  const newKey = async (tier: "internal" | "standard", extra: object = {}) => {
    const id = `acct-${Math.random().toString(36).slice(2, 10)}`
    expect((await api.admin("POST", "/admin/v1/accounts", { id, tier, ...extra })).status).toBe(200)
    const key = await api.admin("POST", `/admin/v1/accounts/${id}/keys`, {})
    expect(key.status).toBe(200)
    return { id, key: key.body.key as string, keyId: key.body.id as string }
  }

  describe("400 on create", () => {
    it("the body is not valid JSON", () => refusedCreate("{not json", 400, "The request body is not valid JSON"))
    it("the body is not a batch", async () => {
      await refusedCreate([1, 2], 400, /not a batch/)
      await refusedCreate({ prompts: [] }, 400, /not a batch/)
    })
    it("a request is invalid (neither messages nor input)", async () => {
      const row = { custom_id: "q-1", body: { model: "glm-5.3-flash" } }
      const answer = await refusedCreate(
        { requests: [chatRow("q-0", "hi"), row] },
        400,
        "requests[1] (custom_id 'q-1'): body must include a non-empty messages list or Responses API input",
      )
      expect(answer.body.error.param).toBe("requests[1].body")
    })
    it("a request asks for background", async () => {
      const row = { custom_id: "q-1", body: { model: "glm-5.3-flash", input: "hi", background: true } }
      const answer = await refusedCreate(
        { requests: [chatRow("q-0", "hi"), row] },
        400,
        "requests[1] (custom_id 'q-1'): background is not supported in batch request bodies",
      )
      expect(answer.body.error.param).toBe("requests[1].body.background")
    })
    it("a Responses row carries an item a batch cannot run", async () => {
      const row = { custom_id: "q-1", body: { model: "glm-5.3-flash", input: [{ type: "web_search_call", id: "ws" }] } }
      const answer = await refusedCreate({ requests: [row] }, 400, /^requests\[0\] \(custom_id 'q-1'\): 'body.input\[0\]' is a 'web_search_call' item/)
      expect(answer.body.error.param).toBe("requests[0].body.input[0].type")
    })
    it("a request streams", () =>
      refusedCreate({ requests: [chatRow("q-1", "hi", "glm-5.3-flash", { stream: true })] }, 400, /^requests\[0\] \(custom_id 'q-1'\): .*stream/))
    it("a request uses an unknown model, named as the seed shows", () =>
      refusedCreate(
        { requests: [chatRow("q-1", "hi"), chatRow("q-2", "hi", "no-such-model")] },
        400,
        "requests[1] (custom_id 'q-2'): Model 'no-such-model' not found",
      ))
    it("a model the account may not use reads exactly like one that does not exist", async () => {
      const limited = await newKey("internal", { models: ["glm-5.3-flash"] })
      await refusedCreate(
        { requests: [chatRow("q-1", "hi", "secret-model")] },
        400,
        "requests[0] (custom_id 'q-1'): Model 'secret-model' not found",
        limited.key,
      )
    })
    it("a request uses an auto model", async () => {
      await refusedCreate({ requests: [chatRow("q-1", "hi", "auto")] }, 400, /^requests\[0\] \(custom_id 'q-1'\): Model 'auto' .*auto model/)
      await refusedCreate({ requests: [chatRow("q-1", "hi", "auto-fast")] }, 400, /auto model/)
    })
    it("a custom_id repeats", () =>
      refusedCreate({ requests: [chatRow("a", "1"), chatRow("b", "2"), chatRow("a", "3")] }, 400, /^requests\[2\] \(custom_id 'a'\): .*requests\[0\]/))
    it("a request has the wrong method or url", async () => {
      await refusedCreate({ requests: [{ ...chatRow("a", "1"), method: "GET" }] }, 400, /'method' must be 'POST'/)
      await refusedCreate({ requests: [{ ...chatRow("a", "1"), url: "/v1/completions" }] }, 400, /'url' must be one of '\/v1\/chat\/completions', '\/v1\/embeddings', '\/v1\/responses'/)
      await refusedCreate(
        { requests: [chatRow("a", "1"), { ...chatRow("b", "2"), url: "/v1/embeddings" }] },
        400,
        "requests[1] (custom_id 'b'): 'url' is '/v1/embeddings' but this batch calls '/v1/chat/completions': every request of a batch calls the same endpoint",
      )
    })
    it("the batch holds too many requests", async () => {
      const requests = Array.from({ length: 50_001 }, (_, i) => ({ custom_id: `r${i}`, body: { model: "glm-5.3-flash", messages: [{ role: "user", content: "x" }] } }))
      await refusedCreate({ requests }, 400, /50001 requests, more than the limit of 50000/)
    })
    it("the batch holds no requests", () => refusedCreate({ requests: [] }, 400, /no requests/))
    it("metadata breaks its limits", () =>
      refusedCreate({ requests: [chatRow("a", "1")], metadata: { k: "v".repeat(513) } }, 400, /512/))
  })

  it("400 on results: after is not a result ID", async () => {
    const created = await api.call("POST", "/v1/batches", { requests: [chatRow("a", "1")] })
    for (const after of ["nope", "batch_req_", "batch_req_x1", "42"]) {
      expectError(await api.call("GET", `/v1/batches/${created.body.id}/results?after=${after}`), 400, /'after' must be a result ID such as batch_req_42/)
    }
    for (const limit of ["0", "1001", "ten", "-1"]) {
      expectError(await api.call("GET", `/v1/batches/${created.body.id}/results?limit=${limit}`), 400, /'limit' must be a whole number from 1 to 1000/)
    }
    expectError(await api.call("GET", "/v1/batches?limit=101"), 400, /'limit' must be a whole number from 1 to 100/)
  })

  describe("401: the API key is missing, invalid or expired", () => {
    const endpoints = (batchId: string) => [
      ["POST", "/v1/batches"],
      ["GET", "/v1/batches"],
      ["GET", `/v1/batches/${batchId}`],
      ["GET", `/v1/batches/${batchId}/results`],
      ["POST", `/v1/batches/${batchId}/cancel`],
      ["DELETE", `/v1/batches/${batchId}`],
    ] as const

    it("missing, on every endpoint", async () => {
      for (const [method, path] of endpoints("batch_x")) {
        expectError(await api.call(method, path, undefined, {}), 401, /Missing API key/)
      }
    })
    it("invalid, as a bearer token or an X-API-Key", async () => {
      for (const [method, path] of endpoints("batch_x")) {
        expectError(await api.call(method, path, undefined, { authorization: "Bearer hyi-wrong" }), 401, "Invalid API key")
        expectError(await api.call(method, path, undefined, { "x-api-key": "hyi-wrong" }), 401, "Invalid API key")
      }
    })
    it("expired or revoked, and the account suspended", async () => {
      const acct = await newKey("internal")
      const expired = await api.admin("POST", `/admin/v1/accounts/${acct.id}/keys`, { expires_at: Math.floor(Date.now() / 1000) - 1 })
      expectError(await f.api(expired.body.key).call("GET", "/v1/batches"), 401, /expired/)
      expect((await f.api(acct.key).call("GET", "/v1/batches")).status).toBe(200)
      await api.admin("POST", `/admin/v1/keys/${acct.keyId}/revoke`)
      expectError(await f.api(acct.key).call("GET", "/v1/batches"), 401, /revoked/)
      const other = await newKey("internal")
      // Used first, so that what the service knew of the key while its account was active is not what answers after.
      expect((await f.api(other.key).call("GET", "/v1/batches")).status).toBe(200)
      await api.admin("PATCH", `/admin/v1/accounts/${other.id}`, { status: "suspended" })
      expectError(await f.api(other.key).call("GET", "/v1/batches"), 401, /suspended/)
    })
  })

  it("403: a standard account may not create batches, but may read and list", async () => {
    const standard = await newKey("standard")
    await refusedCreate({ requests: [chatRow("a", "1")] }, 403, /internal accounts only/, standard.key)
    expect((await f.api(standard.key).call("GET", "/v1/batches")).status).toBe(200)
  })

  describe("404: the batch does not exist, was deleted, or belongs to another account", () => {
    it("does not exist, on every batch endpoint", async () => {
      for (const [method, path] of [
        ["GET", "/v1/batches/batch_nope"],
        ["GET", "/v1/batches/batch_nope/results"],
        ["POST", "/v1/batches/batch_nope/cancel"],
        ["DELETE", "/v1/batches/batch_nope"],
      ] as const) {
        expectError(await api.call(method, path), 404, "No batch found with id 'batch_nope'")
      }
    })
    it("belongs to another account: reads exactly as not found, and is left untouched", async () => {
      const created = await api.call("POST", "/v1/batches", { requests: [chatRow("a", "mine")] })
      const stranger = f.api((await newKey("internal")).key)
      for (const [method, path] of [
        ["GET", `/v1/batches/${created.body.id}`],
        ["GET", `/v1/batches/${created.body.id}/results`],
        ["POST", `/v1/batches/${created.body.id}/cancel`],
        ["DELETE", `/v1/batches/${created.body.id}`],
      ] as const) {
        expectError(await stranger.call(method, path), 404, `No batch found with id '${created.body.id}'`)
      }
      expect((await stranger.call("GET", "/v1/batches")).body.data).toEqual([])
      expect((await api.waitFinal(created.body.id)).status).toBe("completed")
    })
    it("an unknown path answers in the same envelope", async () => {
      expectError(await api.call("GET", "/v1/nothing-here"), 404, "No such endpoint")
    })
  })

  it("409: deleting while a request runs; then cancel, wait, delete, and it is gone", async () => {
    const created = await api.call("POST", "/v1/batches", {
      requests: [chatRow("slow", `slow ${simDirective.latency(1500)}`), chatRow("later", "not yet")],
    })
    const id = created.body.id
    for (let i = 0; i < 200; i++) {
      const [row] = await api.allResults(id)
      if (row.status === "running") break
      await new Promise((r) => setTimeout(r, 10))
    }
    expectError(await api.call("DELETE", `/v1/batches/${id}`), 409, /still running/)
    const cancelling = await api.call("POST", `/v1/batches/${id}/cancel`)
    expect(cancelling.body.status === "cancelling" || cancelling.body.status === "cancelled").toBe(true)
    const done = await api.waitFinal(id)
    expect(done.status).toBe("cancelled")
    const deleted = await api.call("DELETE", `/v1/batches/${id}`)
    expect(deleted.status).toBe(200)
    expect(deleted.body).toEqual({ id, object: "batch.deleted", deleted: true })
    expectError(await api.call("GET", `/v1/batches/${id}`), 404, new RegExp(`^Batch '${id}' was deleted at `))
    expectError(await api.call("GET", `/v1/batches/${id}/results`), 404, new RegExp(`^Batch '${id}' was deleted at `))
  })

  it("413: a create body over 32 MiB, refused without storing anything", async () => {
    const filler = "x".repeat(33 * 1024 * 1024)
    await refusedCreate(`{"requests":[],"pad":"${filler}"}`, 413, /larger than the limit of 33554432 bytes/)
  })

  it("GET /openapi.json serves the spec generated from the HttpApi, every endpoint in it", async () => {
    const spec = await api.call("GET", "/openapi.json", undefined, {})
    expect(spec.status).toBe(200)
    expect(spec.body.openapi).toMatch(/^3\./)
    const operations = Object.entries(spec.body.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
    )
    expect(operations.sort()).toEqual(
      [
        "POST /v1/batches",
        "GET /v1/batches",
        "GET /v1/batches/{batch_id}",
        "GET /v1/batches/{batch_id}/results",
        "GET /v1/batches/{batch_id}/results.jsonl",
        "GET /v1/batches/{batch_id}/events",
        "GET /v1/batches/{batch_id}/progress",
        "POST /v1/batches/{batch_id}/cancel",
        "POST /v1/batches/{batch_id}/rerun",
        "POST /v1/batches/estimate",
        "POST /admin/v1/accounts/{id}/webhooks",
        "GET /admin/v1/accounts/{id}/webhooks",
        "DELETE /admin/v1/webhooks/{id}",
        "GET /admin/v1/webhooks/{id}/deliveries",
        "DELETE /v1/batches/{batch_id}",
        "POST /admin/v1/accounts",
        "PATCH /admin/v1/accounts/{id}",
        "POST /admin/v1/accounts/{id}/keys",
        "POST /admin/v1/keys/{id}/revoke",
        "GET /admin/v1/batches/{batch_id}",
        "GET /admin/v1/models/history",
        "POST /v1/chat/completions",
        "POST /v1/responses",
        "GET /v1/responses",
        "GET /v1/responses/events",
        "GET /v1/responses/{response_id}",
        "POST /v1/responses/{response_id}/cancel",
        "DELETE /v1/responses/{response_id}",
        "POST /v1/streams",
        "GET /v1/streams",
        "GET /v1/streams/{stream_id}",
        "PATCH /v1/streams/{stream_id}",
        "POST /v1/files",
        "GET /v1/files",
        "GET /v1/files/{file_id}",
        "GET /v1/files/{file_id}/content",
        "DELETE /v1/files/{file_id}",
        "GET /v1/batches/{batch_id}/results/{result_id}",
        "GET /v1/models",
        "GET /admin/v1/models",
        "GET /admin/v1/leases",
        "GET /healthz",
        "GET /readyz",
        "GET /metrics",
      ].sort(),
    )
    const upload = spec.body.paths["/v1/files"].post
    expect(Object.keys(upload.requestBody.content)).toEqual(["multipart/form-data"])
    expect(upload.requestBody.content["multipart/form-data"].schema.required).toEqual(["file", "purpose"])
    expect(Object.keys(upload.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "404", "413"]))
    const create = spec.body.paths["/v1/batches"].post
    expect(create.requestBody.content["application/json"].schema).toBeDefined()
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "403", "404", "409", "413", "422"]))
    expect(create.parameters.map((p: { name: string }) => p.name)).toContain("idempotency-key")
  })

  it("no malformed input produces a 5xx", async () => {
    const bodies = ["", "null", "0", '"text"', "[]", "{}", '{"requests":null}', '{"requests":[null]}', '{"requests":[{"custom_id":{}}]}', '{"requests":[{"custom_id":"a","body":[]}]}', '{"requests":[{"custom_id":"a","body":{"model":1,"messages":[]}}]}', "\u0000\u0001", '{"requests":[{"custom_id":"a","body":{"model":"glm-5.3-flash","messages":[1]}}]}']
    for (const body of bodies) {
      const answer = await api.call("POST", "/v1/batches", body)
      expect(answer.status, body).toBe(400)
    }
  })
})
