import { beforeAll, describe, expect, it } from "vitest"
import { type Answer, chatRow } from "../support/client.js"
import { BOOTSTRAP_KEY } from "../support/sluice.js"
import { withSluice } from "../support/withSluice.js"

/*
 * Every route of the API definition that takes a body, query or path parameters, sent a wrongly
 * typed field: each answers 400 in the OpenAI envelope with one line naming the field (and, where
 * the request failed to decode against its schema, the request: `Invalid request body for PATCH
 * /admin/v1/accounts/{id}: …`), and nothing is stored. A route whose only inputs are opaque ids has no
 * wrongly typed value to send: an unknown id answers 404 naming it, in one line.
 */

const MODEL = "glm-5.3-flash"

interface World {
  readonly account: { readonly id: string; readonly object: unknown }
  readonly batchId: string
  readonly streamId: string
}

interface Sent {
  /** How the OpenAPI document names the operation: `PATCH /admin/v1/accounts/{id}`. */
  readonly route: string
  readonly send: (w: World) => Promise<Answer>
}

interface Typed extends Sent {
  readonly field: string
  /** The request failed to decode against its schema: the one formatter names the request too. */
  readonly decoded?: boolean
  /** A read of what the request would have changed, the same before and after it. */
  readonly state?: (w: World) => Promise<unknown>
  /** An upload's parts are appended as they arrive and purged when it is refused: the log's head moves, what it holds does not. */
  readonly streamed?: boolean
}

interface OpaqueId extends Sent {
  readonly id: string
}

describe("a wrongly typed field is named in one line on every route", () => {
  const f = withSluice({ models: (url) => [{ id: MODEL, upstream_url: url, batch_concurrency: 2 }] })
  const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    f.api().call(method, path, body, headers === undefined ? undefined : { authorization: `Bearer ${BOOTSTRAP_KEY}`, ...headers })
  const admin = (method: string, path: string, body?: unknown) => f.api().admin(method, path, body)
  const read = async (path: string, asAdmin = false) => (await (asAdmin ? admin("GET", path) : call("GET", path))).body
  const upload = async (fields: Record<string, string>) => {
    const form = new FormData()
    for (const [name, value] of Object.entries(fields)) form.append(name, value)
    form.append("file", new Blob([`${JSON.stringify(chatRow("q-1", "hi", MODEL))}\n`]), "input.jsonl")
    const response = await fetch(`${f.sluice.url}/v1/files`, { method: "POST", headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` }, body: form })
    const text = await response.text()
    return { status: response.status, text, body: JSON.parse(text), headers: response.headers } as Answer
  }

  let world: World
  beforeAll(async () => {
    const id = "acct-fields"
    const created = await admin("POST", "/admin/v1/accounts", { id, tier: "standard", concurrency: 2 })
    expect(created.status).toBe(200)
    const batch = await call("POST", "/v1/batches", { requests: [chatRow("q-1", "hi", MODEL), chatRow("q-2", "there", MODEL)] })
    expect(batch.status).toBe(200)
    await f.api().waitFinal(batch.body.id)
    const stream = await call("POST", "/v1/streams", { name: "fields" })
    expect(stream.status).toBe(201)
    world = { account: { id, object: created.body }, batchId: batch.body.id, streamId: stream.body.id }
  })

  const batches = () => read("/v1/batches?limit=100")
  const typed: ReadonlyArray<Typed> = [
    { route: "POST /v1/batches", field: "metadata", state: batches, send: () => call("POST", "/v1/batches", { requests: [chatRow("q-1", "hi", MODEL)], metadata: "x" }) },
    {
      route: "POST /v1/batches",
      field: "Idempotency-Key",
      state: batches,
      send: () => call("POST", "/v1/batches", { requests: [chatRow("q-1", "hi", MODEL)] }, { "idempotency-key": " " }),
    },
    { route: "POST /v1/batches/estimate", field: "metadata", send: () => call("POST", "/v1/batches/estimate", { requests: [chatRow("q-1", "hi", MODEL)], metadata: 5 }) },
    { route: "GET /v1/batches", field: "limit", send: () => call("GET", "/v1/batches?limit=lots") },
    { route: "GET /v1/batches/{batch_id}", field: "as_of", send: (w) => call("GET", `/v1/batches/${w.batchId}?as_of=yesterday`) },
    { route: "GET /v1/batches/{batch_id}/results", field: "limit", send: (w) => call("GET", `/v1/batches/${w.batchId}/results?limit=lots`) },
    { route: "GET /v1/batches/{batch_id}/events", field: "last_event_id", send: (w) => call("GET", `/v1/batches/${w.batchId}/events?last_event_id=lots`) },
    { route: "GET /v1/batches/{batch_id}/events", field: "Last-Event-ID", send: (w) => call("GET", `/v1/batches/${w.batchId}/events`, undefined, { "last-event-id": "lots" }) },
    { route: "POST /v1/batches/{batch_id}/rerun", field: "statuses", state: batches, send: (w) => call("POST", `/v1/batches/${w.batchId}/rerun`, { statuses: 5 }) },
    { route: "POST /admin/v1/accounts", field: "concurrency", decoded: true, send: () => admin("POST", "/admin/v1/accounts", { id: "acct-never", concurrency: "lots" }) },
    {
      route: "PATCH /admin/v1/accounts/{id}",
      field: "concurrency",
      decoded: true,
      // An empty patch changes nothing and answers the account as it is.
      state: async (w) => (await admin("PATCH", `/admin/v1/accounts/${w.account.id}`, {})).body,
      send: (w) => admin("PATCH", `/admin/v1/accounts/${w.account.id}`, { concurrency: "lots" }),
    },
    { route: "POST /admin/v1/accounts/{id}/keys", field: "expires_at", decoded: true, send: (w) => admin("POST", `/admin/v1/accounts/${w.account.id}/keys`, { expires_at: "soon" }) },
    {
      route: "POST /admin/v1/accounts/{id}/webhooks",
      field: "url",
      state: (w) => read(`/admin/v1/accounts/${w.account.id}/webhooks`, true),
      send: (w) => admin("POST", `/admin/v1/accounts/${w.account.id}/webhooks`, { url: 5 }),
    },
    { route: "POST /v1/chat/completions", field: "messages", send: () => call("POST", "/v1/chat/completions", { model: MODEL, messages: "hi" }) },
    {
      route: "POST /v1/responses",
      field: "temperature",
      state: () => read("/v1/responses"),
      send: () => call("POST", "/v1/responses", { model: MODEL, input: "hi", background: true, temperature: "hot" }),
    },
    { route: "GET /v1/responses/events", field: "limit", send: () => call("GET", "/v1/responses/events?limit=lots") },
    { route: "GET /v1/responses", field: "limit", send: () => call("GET", "/v1/responses?limit=lots") },
    { route: "GET /v1/responses", field: "after", decoded: true, send: () => call("GET", "/v1/responses?after=a&after=b") },
    { route: "POST /v1/streams", field: "name", state: () => read("/v1/streams"), send: () => call("POST", "/v1/streams", { name: 5 }) },
    {
      route: "PATCH /v1/streams/{stream_id}",
      field: "status",
      state: (w) => read(`/v1/streams/${w.streamId}`),
      send: (w) => call("PATCH", `/v1/streams/${w.streamId}`, { status: 5 }),
    },
    {
      route: "POST /v1/files",
      field: "expires_after[seconds]",
      state: () => read("/v1/files"),
      streamed: true,
      send: () => upload({ purpose: "batch", "expires_after[anchor]": "created_at", "expires_after[seconds]": "soon" }),
    },
    { route: "GET /v1/files", field: "limit", send: () => call("GET", "/v1/files?limit=lots") },
  ]

  const opaque: ReadonlyArray<OpaqueId> = [
    { route: "GET /v1/batches/{batch_id}/results/{result_id}", id: "lots", send: (w) => call("GET", `/v1/batches/${w.batchId}/results/lots`) },
    { route: "GET /v1/batches/{batch_id}/results.jsonl", id: "batch_lots", send: () => call("GET", "/v1/batches/batch_lots/results.jsonl") },
    { route: "GET /v1/batches/{batch_id}/progress", id: "batch_lots", send: () => call("GET", "/v1/batches/batch_lots/progress") },
    { route: "POST /v1/batches/{batch_id}/cancel", id: "batch_lots", send: () => call("POST", "/v1/batches/batch_lots/cancel") },
    { route: "DELETE /v1/batches/{batch_id}", id: "batch_lots", send: () => call("DELETE", "/v1/batches/batch_lots") },
    { route: "GET /admin/v1/batches/{batch_id}", id: "batch_lots", send: () => admin("GET", "/admin/v1/batches/batch_lots") },
    { route: "POST /admin/v1/keys/{id}/revoke", id: "key_lots", send: () => admin("POST", "/admin/v1/keys/key_lots/revoke") },
    { route: "GET /admin/v1/accounts/{id}/webhooks", id: "acct-lots", send: () => admin("GET", "/admin/v1/accounts/acct-lots/webhooks") },
    { route: "DELETE /admin/v1/webhooks/{id}", id: "wh_lots", send: () => admin("DELETE", "/admin/v1/webhooks/wh_lots") },
    { route: "GET /admin/v1/webhooks/{id}/deliveries", id: "wh_lots", send: () => admin("GET", "/admin/v1/webhooks/wh_lots/deliveries") },
    { route: "GET /v1/responses/{response_id}", id: "resp_lots", send: () => call("GET", "/v1/responses/resp_lots") },
    { route: "POST /v1/responses/{response_id}/cancel", id: "resp_lots", send: () => call("POST", "/v1/responses/resp_lots/cancel") },
    { route: "DELETE /v1/responses/{response_id}", id: "resp_lots", send: () => call("DELETE", "/v1/responses/resp_lots") },
    { route: "GET /v1/streams/{stream_id}", id: "stream_lots", send: () => call("GET", "/v1/streams/stream_lots") },
    { route: "GET /v1/files/{file_id}", id: "file-lots", send: () => call("GET", "/v1/files/file-lots") },
    { route: "GET /v1/files/{file_id}/content", id: "file-lots", send: () => call("GET", "/v1/files/file-lots/content") },
    { route: "DELETE /v1/files/{file_id}", id: "file-lots", send: () => call("DELETE", "/v1/files/file-lots") },
  ]

  const logHead = async () => (await read("/readyz")).log.head as number

  const expectOneLine = (answer: Answer, status: number) => {
    expect(answer.status, answer.text).toBe(status)
    expect(Object.keys(answer.body)).toEqual(["error"])
    expect(Object.keys(answer.body.error)).toEqual(["message", "type", "param", "code"])
    expect(answer.body.error.type).toBe("invalid_request_error")
    expect(answer.body.error.message).not.toContain("\n")
    expect(answer.body.error.message.length).toBeLessThan(300)
  }

  it("the table covers every operation of the API definition that takes a body, query or path parameters", async () => {
    const spec = await read("/openapi.json")
    const taking: Array<string> = []
    for (const [path, item] of Object.entries<Record<string, any>>(spec.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        if ((operation.parameters ?? []).length > 0 || operation.requestBody !== undefined) taking.push(`${method.toUpperCase()} ${path}`)
      }
    }
    expect(taking.length).toBeGreaterThan(30)
    expect([...new Set([...typed, ...opaque].map((c) => c.route))].sort()).toEqual(taking.sort())
  })

  it.each(typed.map((c) => [`${c.route}: '${c.field}'`, c] as const))("%s answers 400 naming the field and stores nothing", async (_, c) => {
    const before = await c.state?.(world)
    const head = await logHead()
    const answer = await c.send(world)
    expectOneLine(answer, 400)
    expect(answer.body.error.param).toBe(c.field)
    expect(answer.body.error.message).toContain(c.field)
    if (c.decoded === true) expect(answer.body.error.message).toMatch(new RegExp(`^Invalid (request body|query parameters) for ${c.route.replace(/[{}[\]]/g, "\\$&")}: '${c.field}' `))
    if (c.streamed !== true) expect(await logHead()).toBe(head)
    if (c.state !== undefined) expect(await c.state(world)).toEqual(before)
  })

  it.each(opaque.map((c) => [c.route, c] as const))("%s: an unknown id answers 404 naming it", async (_, c) => {
    const head = await logHead()
    const answer = await c.send(world)
    expectOneLine(answer, 404)
    expect(answer.body.error.message).toContain(`'${c.id}'`)
    expect(await logHead()).toBe(head)
  })

  it("a bad PATCH leaves the account as it was", async () => {
    const refused = await admin("PATCH", `/admin/v1/accounts/${world.account.id}`, { concurrency: "lots" })
    expect(refused.body.error.message).toBe(`Invalid request body for PATCH /admin/v1/accounts/{id}: 'concurrency' must be a number, got "lots"`)
    expect((await admin("PATCH", `/admin/v1/accounts/${world.account.id}`, {})).body).toEqual(world.account.object)
  })
})
