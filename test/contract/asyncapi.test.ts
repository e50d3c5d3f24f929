import { Parser } from "@asyncapi/parser"
import { Ajv } from "ajv"
import Database from "better-sqlite3"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AccountEvent, accountSubject } from "../../src/domain/account/events.js"
import { IdempotencyEvent } from "../../src/domain/idempotency/events.js"
import { idempotencySubject } from "../../src/domain/idempotency/subjects.js"
import { WebhookEvent, webhookSubject } from "../../src/domain/webhook/events.js"
import { onceOnlyTypes, rowEventTypes } from "../../src/domain/batch/events.js"
import { StreamEvent, streamSubject } from "../../src/domain/stream/events.js"
import { FileEvent, filePartSubject, fileSubject, isFilePartSubject } from "../../src/domain/file/events.js"
import { batchSubject, laneSubject, laneToken } from "../../src/domain/batch/subjects.js"
import { CHUNK_HEADER } from "../../src/eventlog/chunking.js"
import { simDirective } from "../../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { chatRow, client } from "../support/client.js"
import { BOOTSTRAP_KEY } from "../support/sluice.js"
import { waitFor } from "../support/waitFor.js"
import { type InProcessSluice, startInProcessSluice } from "../support/inProcessSluice.js"

/*
 * The event contract at /asyncapi.json: a valid AsyncAPI 3 document, the same as the one kept in
 * the repository, naming every event type the code publishes on the subject it publishes it on, and
 * describing each payload a running Sluice actually stored.
 */

const MODEL = "glm-5.3-flash"
const committed = () => readFileSync(new URL("../../docs/asyncapi.json", import.meta.url), "utf8")

/**
 * Every type the writers publish on its own subject, listed from the sets the writers use rather than
 * from the generator's source. Row events go only inside lane windows (a test below reads them there).
 */
const publishedBatchTypes = [...onceOnlyTypes, "rows_added", "row_bodies"] as const
const literalType = (m: { fields: { type: unknown } }) => (m.fields.type as { literals: [string] }).literals[0]
const publishedAccountTypes = AccountEvent.members.map(literalType)
const publishedIdempotencyTypes = IdempotencyEvent.members.map(literalType)
const publishedWebhookTypes = WebhookEvent.members.map(literalType)
const publishedStreamTypes = StreamEvent.members.map(literalType)
const publishedFileTypes = FileEvent.members.map(literalType)
const webhookSubjectOf = { webhook_created: "webhook_created", webhook_deleted: "webhook_deleted", webhook_delivery_attempted: "delivery_attempted" } as const

/** A channel's address with its parameters filled in, as a subject. */
const subjectOf = (address: string, values: Record<string, string>) =>
  address.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? `{${name}}`)

describe("the AsyncAPI document", () => {
  let sim: Simulator
  let sluice: InProcessSluice
  let served: string
  let spec: any

  beforeAll(async () => {
    sim = await startSimulator({ models: [MODEL] })
    sluice = await startInProcessSluice({ models: [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 2 }] })
    const response = await fetch(`${sluice.url}/asyncapi.json`)
    expect(response.headers.get("content-type")).toMatch(/application\/json/)
    served = await response.text()
    spec = JSON.parse(served)
  })
  afterAll(async () => {
    await sluice?.stop()
    await sim?.close()
  })

  it("is served at /asyncapi.json exactly as committed in docs/asyncapi.json (npm run asyncapi rewrites it)", () => {
    expect(served).toBe(committed())
  })

  it("parses with @asyncapi/parser as AsyncAPI 3 with no error or warning", async () => {
    const { document, diagnostics } = await new Parser().parse(served)
    expect(diagnostics.filter((d) => d.severity <= 1).map((d) => `${d.path.join(".")}: ${d.message}`)).toEqual([])
    expect(document?.version()).toMatch(/^3\./)
    // Every batch event type but the row events, and the lane window that carries them (a response's are the same messages);
    // a file's events and its raw parts.
    const ids = new Set(document!.messages().all().map((m) => m.id()))
    expect(ids.size).toBe(
      publishedBatchTypes.length + 1 + publishedStreamTypes.length + publishedFileTypes.length + 1 +
        publishedAccountTypes.length + publishedIdempotencyTypes.length + publishedWebhookTypes.length,
    )
  })

  it("has a message and a channel for every event type the code publishes, on the subject the code builds", async () => {
    const { document } = await new Parser().parse(served)
    const channels = document!.channels().all()
    const find = (subject: string, type: string) =>
      channels.find(
        (c) =>
          c.messages().all().some((m) => m.id() === type) &&
          subjectOf(c.address()!, {
            batch_id: "batch_x",
            response_id: "resp_x",
            stream_id: "stream_x",
            file_id: "file-x",
            lane: laneToken("m"),
            account_id: "acct_x",
            digest: "d1",
            webhook_id: "wh_x",
          }) === subject,
      )
    for (const type of publishedBatchTypes) expect(find(batchSubject("batch_x", type), type), type).toBeDefined()
    // A response runs as a one-row batch: the same messages on its own subjects.
    for (const type of publishedBatchTypes) expect(find(batchSubject("resp_x", type), type), `response ${type}`).toBeDefined()
    expect(batchSubject("resp_x", "batch_created")).toBe("response.resp_x.batch_created")
    for (const type of publishedStreamTypes) expect(find(streamSubject("stream_x", type as never), type), type).toBeDefined()
    for (const type of publishedFileTypes) expect(find(fileSubject("file-x", type as never), type), type).toBeDefined()
    expect(find(filePartSubject("file-x"), "file_part")).toBeDefined()
    // Row events are in the lane window's payload, and no channel offers them on a subject of their own.
    expect(find(laneSubject("batch_x", "m"), "lane_window")).toBeDefined()
    expect(find(laneSubject("resp_x", "m"), "lane_window")).toBeDefined()
    for (const type of rowEventTypes) expect(channels.find((c) => c.messages().all().some((m) => m.id() === type)), type).toBeUndefined()
    const windowEvents = JSON.stringify(spec.components.messages.lane_window.payload.properties.events)
    for (const type of rowEventTypes) expect(windowEvents, type).toContain(type)
    for (const type of publishedAccountTypes) expect(find(accountSubject("acct_x", type as never), type), type).toBeDefined()
    for (const type of publishedIdempotencyTypes) expect(find(idempotencySubject("d1"), type), type).toBeDefined()
    for (const type of publishedWebhookTypes) {
      expect(find(webhookSubject("wh_x", webhookSubjectOf[type as keyof typeof webhookSubjectOf]), type), type).toBeDefined()
    }
    for (const channel of channels) expect(document!.operations().all().some((o) => o.channels().all().some((c) => c.id() === channel.id()))).toBe(true)
  })

  it("describes the response a response's batch_created carries", () => {
    const response = spec.components.messages.batch_created.payload.properties.response
    expect(response.description).toContain("response.<response_id>.batch_created")
    expect(Object.keys(response.properties).sort()).toEqual(["background", "custom_id", "echo", "endpoint", "service_tier", "stream_id"])
    for (const [name, field] of Object.entries(response.properties)) expect((field as { description?: string }).description, name).toBeTruthy()
    expect(spec.info.description).toContain("response.<response_id>.<event_type>")
    expect(spec.info.description).toContain("stream.<stream_id>.<event_type>")
  })

  it("describes a file's raw parts as bytes, not JSON, and names the file's subjects", () => {
    const part = spec.components.messages.file_part
    expect(part.contentType).toBe("application/octet-stream")
    expect(part.payload).toEqual({ type: "string", format: "binary" })
    expect(part.description).toContain("sluice.file.part")
    expect(spec.channels.file_part.address).toBe("file.{file_id}.part")
    expect(spec.info.description).toContain("file.<file_id>.<event_type>")
    expect(spec.components.schemas.Headers.properties["ce-datacontenttype"].description).toContain("application/octet-stream")
  })

  it("documents the headers a stored message carries", () => {
    const headers = spec.components.schemas.Headers.properties
    expect(Object.keys(headers)).toEqual(expect.arrayContaining(["Nats-Msg-Id", CHUNK_HEADER]))
  })

  it("describes every message a batch's, a response's, a stream's and a file's life stored: each falls in one channel and its payload validates", async () => {
    const api = client(sluice.url)
    // First, as retention purges everything that ended before: a stream archived and purged after its retention.
    const purged = await api.call("POST", "/v1/streams", { name: "purged" })
    expect((await api.call("PATCH", `/v1/streams/${purged.body.id}`, { status: "archived" })).status).toBe(200)
    await sluice.adjust(7 * 86_400_000)
    await waitFor("the stream is purged", async () => (await api.call("GET", `/v1/streams/${purged.body.id}`)).status === 404)
    const account = `acct_${Math.random().toString(36).slice(2, 8)}`
    expect((await api.admin("POST", "/admin/v1/accounts", { id: account, tier: "internal" })).status).toBe(200)
    expect((await api.admin("POST", `/admin/v1/accounts/${account}/keys`, {})).status).toBe(200)
    const created = await api.call("POST", "/v1/batches", {
      requests: [
        chatRow("ok", "a plain row"),
        chatRow("retried", `once more ${simDirective.fail(1, 500)}`),
        chatRow("refused", `no ${simDirective.status(400)}`),
      ],
      metadata: { project: "contract" },
    }, { authorization: `Bearer ${BOOTSTRAP_KEY}`, "idempotency-key": "contract-1" })
    expect(created.status, created.text).toBe(200)
    // The retried row waits out its backoff on the actors' TestClock.
    let finished: any
    for (let turn = 0; turn < 200 && finished === undefined; turn++) {
      const batch = (await api.call("GET", `/v1/batches/${created.body.id}`)).body
      if (batch.status === "completed") finished = batch
      else await sluice.adjust(5_000).then(() => new Promise((r) => setTimeout(r, 50)))
    }
    expect(finished.status).toBe("completed")
    const doomed = await api.call("POST", "/v1/batches", { requests: [chatRow("d", "to be deleted")] })
    await api.waitFinal(doomed.body.id)
    expect((await api.call("DELETE", `/v1/batches/${doomed.body.id}`)).status).toBe(200)

    // A background response, and a stream with an item, renamed, cancelled and archived.
    const background = await api.call("POST", "/v1/responses", { model: MODEL, input: "in the background", background: true })
    expect(background.status, background.text).toBe(200)
    const stream = await api.call("POST", "/v1/streams", { name: "contract" })
    expect(stream.status, stream.text).toBe(201)
    const item = await api.call("POST", "/v1/responses", { model: MODEL, input: "an item", metadata: { stream_id: stream.body.id, custom_id: "i-1" } })
    expect(item.status, item.text).toBe(200)
    for (const id of [background.body.id, item.body.id]) {
      await waitFor(`response ${id} is final`, async () => (await api.call("GET", `/v1/responses/${id}`)).body.status !== "in_progress")
    }
    for (const patch of [{ name: "contract 2" }, { status: "cancelled" }, { status: "archived" }]) {
      expect((await api.call("PATCH", `/v1/streams/${stream.body.id}`, patch)).status).toBe(200)
    }

    // Two uploaded files, one of them deleted (purged to its tombstone); the kept one in more than one part.
    const upload = async (name: string, content: string) => {
      const form = new FormData()
      form.append("purpose", "batch")
      form.append("file", new Blob([content]), name)
      const answer = await fetch(`${sluice.url}/v1/files`, { method: "POST", headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` }, body: form })
      expect(answer.status).toBe(200)
      return ((await answer.json()) as { id: string }).id
    }
    const line = (i: number) => `${JSON.stringify({ custom_id: `f-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: MODEL, messages: [{ role: "user", content: "x".repeat(1000) }] } })}\n`
    const kept = await upload("kept.jsonl", Array.from({ length: 400 }, (_, i) => line(i)).join(""))
    const dropped = await upload("dropped.jsonl", line(0))
    expect((await api.call("DELETE", `/v1/files/${dropped}`)).status).toBe(200)

    const ajv = new Ajv({ strict: false, allErrors: true })
    const messages = Object.values(spec.channels).flatMap((channel: any) =>
      Object.keys(channel.messages).map((name) => {
        const pattern = new RegExp(`^${channel.address.replace(/\./g, "\\.").replace(/\{\w+\}/g, "[^.]+")}$`)
        const payload = structuredClone(spec.components.messages[name].payload)
        return { name, pattern, validate: ajv.compile({ ...payload, components: spec.components }) }
      }),
    )
    const db = new Database(join(sluice.dataDir, "log.sqlite"), { readonly: true })
    const stored = db.prepare("SELECT subject, headers, data FROM messages ORDER BY seq").all() as Array<{ subject: string; headers: string | null; data: Buffer }>
    db.close()
    const seen = new Set<string>()
    for (const m of stored) {
      if (m.headers !== null && JSON.parse(m.headers)[CHUNK_HEADER] !== undefined) continue
      if (isFilePartSubject(m.subject)) {
        expect(messages.filter((k) => k.pattern.test(m.subject)).map((k) => k.name), m.subject).toEqual(["file_part"])
        expect(JSON.parse(m.headers!)["ce-datacontenttype"]).toBe(spec.components.messages.file_part.contentType)
        seen.add("file_part")
        continue
      }
      const payload = JSON.parse(m.data.toString("utf8"))
      const matching = messages.filter((k) => k.pattern.test(m.subject) && k.name === payload.type)
      expect(matching.map((k) => k.name), m.subject).toHaveLength(1)
      const { validate, name } = matching[0]!
      expect(validate(payload), `${m.subject}: ${ajv.errorsText(validate.errors)}`).toBe(true)
      seen.add(name)
    }
    expect([...seen].sort()).toEqual(
      expect.arrayContaining([
        "account_created",
        "key_created",
        "batch_created",
        "rows_added",
        "row_bodies",
        "lane_window",
        "batch_completed",
        "batch_purged",
        "idempotency_key_claimed",
        "stream_created",
        "stream_renamed",
        "stream_cancelled",
        "stream_archived",
        "stream_purged",
        "file_part",
        "file_created",
        "file_purged",
      ]),
    )
    // file_deleted is purged with the rest of the file's history at once: the fixture logs hold one whose purge was refused.
    expect(stored.filter((m) => m.subject === filePartSubject(kept)).length).toBeGreaterThan(1)
    expect(stored.filter((m) => m.subject.startsWith(`file.${dropped}.`)).map((m) => m.subject)).toEqual([fileSubject(dropped, "file_purged")])
    expect(stored.some((m) => m.subject === `response.${background.body.id}.batch_created`)).toBe(true)
    expect(stored.some((m) => m.subject.startsWith(`response.${item.body.id}.lane.`))).toBe(true)
  })
})
