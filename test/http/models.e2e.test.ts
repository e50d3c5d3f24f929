import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { client } from "../support/client.js"
import { type InProcessSluice, startInProcessSluice } from "../support/inProcessSluice.js"

describe("GET /v1/models", () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcessSluice({
      models: [
        { id: "glm-5.3-flash", upstream_url: "http://127.0.0.1:9/v1", batch_concurrency: 6, input_usd_per_mtok: 0.1, output_usd_per_mtok: 0.4 },
        { id: "qwen3.6-35b", upstream_url: "http://127.0.0.1:9/v1" },
        { id: "auto-fast", upstream_url: "http://127.0.0.1:9/v1" },
      ],
    })
  })
  afterAll(() => sluice?.stop())

  it("lists the catalog's models in OpenAI's list shape with Sluice's fields, auto models left out", async () => {
    const answer = await client(sluice.url).call("GET", "/v1/models")
    expect(answer.status).toBe(200)
    expect(answer.body.object).toBe("list")
    expect(answer.body.data.map((m: { id: string }) => m.id)).toEqual(["glm-5.3-flash", "qwen3.6-35b"])
    expect(answer.body.data[0]).toMatchObject({
      id: "glm-5.3-flash",
      object: "model",
      owned_by: "sluice",
      batch_concurrency: 6,
      input_usd_per_mtok: 0.1,
      output_usd_per_mtok: 0.4,
    })
    expect(typeof answer.body.data[0].created).toBe("number")
  })

  it("lists only the models the key's account may use", async () => {
    const api = client(sluice.url)
    await api.admin("POST", "/admin/v1/accounts", { id: "narrow", models: ["qwen3.6-35b"] })
    const key = (await api.admin("POST", "/admin/v1/accounts/narrow/keys")).body.key as string
    const answer = await client(sluice.url, key).call("GET", "/v1/models")
    expect(answer.body.data.map((m: { id: string }) => m.id)).toEqual(["qwen3.6-35b"])
  })

  it("needs a key", async () => {
    const answer = await client(sluice.url, "wrong").call("GET", "/v1/models")
    expect(answer.status).toBe(401)
    expect(answer.body.error.type).toBe("authentication_error")
  })

  it("allows no other origin by default (SLUICE_CORS_ORIGINS unset)", async () => {
    const preflight = await fetch(`${sluice.url}/v1/models`, {
      method: "OPTIONS",
      headers: { origin: "http://tools.example", "access-control-request-method": "GET" },
    })
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull()
    const read = await fetch(`${sluice.url}/v1/models`, { headers: { origin: "http://tools.example", authorization: "Bearer hyi-test-bootstrap-key" } })
    expect(read.headers.get("access-control-allow-origin")).toBeNull()
  })
})
