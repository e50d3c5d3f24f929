import OpenAI, { toFile } from "openai"
import { request } from "node:http"
import { rmSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import { MAX_FILE_BYTES } from "../../src/domain/file/upload.js"
import { EventLog } from "../../src/eventlog/EventLog.js"
import * as JetStreamEventLog from "../../src/eventlog/JetStreamEventLog.js"
import * as SqliteEventLog from "../../src/eventlog/SqliteEventLog.js"
import { rawMessages } from "../support/rawLog.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"

/*
 * OpenAI's files over real HTTP, with the official `openai` package where it can: upload, list, retrieve,
 * content byte for byte, delete; another account's file; every kind of bad upload, and a client gone
 * mid-upload, leaving nothing in the log or the list; expiry on the actors' clock; a restart that
 * rebuilds the read model from the log. On both logs.
 */

const HOUR = 3_600_000
const BOUNDARY = "----sluice-files-test"

interface Part {
  readonly name: string
  readonly filename?: string
  readonly content: string | Buffer
}
const partHead = (p: Part) =>
  `--${BOUNDARY}\r\ncontent-disposition: form-data; name="${p.name}"${p.filename === undefined ? "" : `; filename="${p.filename}"`}\r\n` +
  (p.filename === undefined ? "" : "content-type: application/octet-stream\r\n") +
  "\r\n"
/** A multipart body exactly as given: parts in this order, a file part without a filename if none is given. */
const multipart = (parts: ReadonlyArray<Part>) =>
  Buffer.concat([...parts.flatMap((p) => [Buffer.from(partHead(p)), Buffer.from(p.content), Buffer.from("\r\n")]), Buffer.from(`--${BOUNDARY}--\r\n`)])

interface Sent {
  readonly status: number | undefined
  readonly body: any
  /** The request could not be written whole (the server answered and closed first, or the test cut it). */
  readonly cut: boolean
}

/** A raw upload: `head`, then each chunk of `chunks` as the socket takes it, then `tail`; `abort` cuts it after the chunks. */
const rawUpload = (
  url: string,
  key: string,
  options: { head: Buffer; chunks?: () => Iterable<Buffer>; tail?: Buffer; contentLength?: number; beforeTail?: () => Promise<"abort" | "go on"> },
) =>
  new Promise<Sent>((resolve) => {
    let cut = false
    const req = request(`${url}/v1/files`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": `multipart/form-data; boundary=${BOUNDARY}`,
        ...(options.contentLength === undefined ? { "transfer-encoding": "chunked" } : { "content-length": String(options.contentLength) }),
      },
    })
    let answered = false
    req.on("response", (res) => {
      answered = true
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (c) => (text += c))
      res.on("end", () => resolve({ status: res.statusCode, body: text === "" ? undefined : JSON.parse(text), cut }))
      res.on("error", () => resolve({ status: res.statusCode, body: undefined, cut: true }))
    })
    req.on("error", () => {
      cut = true
      if (!answered) setTimeout(() => resolve({ status: undefined, body: undefined, cut }), 200)
    })
    void (async () => {
      const write = (b: Buffer) => new Promise<void>((done) => (req.write(b) ? done() : req.once("drain", done)))
      await write(options.head)
      for (const chunk of options.chunks?.() ?? []) {
        if (answered || cut) return
        await write(chunk)
      }
      if ((await options.beforeTail?.()) === "abort") {
        cut = true
        req.destroy()
        resolve({ status: undefined, body: undefined, cut })
        return
      }
      if (!answered && !cut) req.end(options.tail ?? Buffer.alloc(0))
    })()
  })

/** `n` MiB of lines like `line`; by default lines of 4 KiB, so that 50,000 of them are far more than any test sends. */
const mib = (n: number, line = `{"custom_id":"x","body":{"input":"${"y".repeat(4_000)}"}}\n`) => {
  const unit = Buffer.from(line.repeat(Math.ceil((1024 * 1024) / line.length))).subarray(0, 1024 * 1024)
  return function* () {
    for (let i = 0; i < n; i++) yield unit
  }
}

describe.each(["embedded", "nats"] as const)("files on the %s event log", (log) => {
  const f = withSluice({ log, inProcess: true, lifetime: "test", models: () => [] })
  const place = () => ({ dataDir: f.sluice.dataDir, natsUrl: f.natsUrl })
  /** The file messages in the log, but those there before (on NATS the log outlives each test's Sluice). */
  const fileSubjects = async (before: ReadonlyArray<string> = []) => {
    const old = new Set(before)
    return (await rawMessages(place(), "file.")).map((m) => `${m.seq} ${m.subject}`).filter((m) => !old.has(m))
  }
  const account = async (id: string) => {
    expect((await f.api().admin("POST", "/admin/v1/accounts", { id, tier: "internal" })).status).toBe(200)
    const key = (await f.api().admin("POST", `/admin/v1/accounts/${id}/keys`, {})).body.key as string
    return { key, openai: new OpenAI({ apiKey: key, baseURL: `${f.sluice.url}/v1`, maxRetries: 0 }) }
  }
  const rows = (n: number, prefix = "r") =>
    Array.from({ length: n }, (_, i) => JSON.stringify({ custom_id: `${prefix}-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "m", messages: [{ role: "user", content: `é ${i}` }] } })).join("\n") + "\n"

  it("the openai package uploads, lists, retrieves, reads back byte for byte and deletes files", async () => {
    await f.start()
    const { openai, key } = await account("files-owner")
    const small = Buffer.from(rows(3) + "a last line with no newline, after a \r\n line")
    // Three parts and a bit: content is read back across parts, and a multi-byte character may straddle two.
    const large = Buffer.from(rows(9_000, "large-é"))
    expect(large.length).toBeGreaterThan(3 * 256 * 1024)

    const a = await openai.files.create({ file: await toFile(small, "rows.jsonl"), purpose: "batch" })
    const b = await openai.files.create({ file: await toFile(large, "large.jsonl"), purpose: "batch", expires_after: { anchor: "created_at", seconds: 3600 } })
    const now = Math.floor((await f.sluice.now()) / 1000)
    expect(a).toEqual({
      id: expect.stringMatching(/^file-[0-9A-Za-z]{24}$/),
      object: "file",
      bytes: small.length,
      created_at: expect.any(Number),
      filename: "rows.jsonl",
      purpose: "batch",
      status: "processed",
      expires_at: a.created_at + 30 * 86_400,
      status_details: null,
    })
    expect(Math.abs(a.created_at - now)).toBeLessThanOrEqual(2)
    expect(b).toMatchObject({ bytes: large.length, filename: "large.jsonl", expires_at: b.created_at + 3600 })
    expect(await openai.files.retrieve(a.id)).toEqual(a)

    expect((await openai.files.list()).data.map((x) => x.id)).toEqual([b.id, a.id])
    expect((await openai.files.list({ order: "asc" })).data.map((x) => x.id)).toEqual([a.id, b.id])
    const first = await openai.files.list({ limit: 1 })
    expect(first.data.map((x) => x.id)).toEqual([b.id])
    expect(first.has_more).toBe(true)
    const all: Array<string> = []
    for await (const file of openai.files.list({ limit: 1 })) all.push(file.id)
    expect(all).toEqual([b.id, a.id])
    expect((await openai.files.list({ purpose: "batch" })).data).toHaveLength(2)
    expect((await openai.files.list({ purpose: "fine-tune" })).data).toEqual([])
    const page = await f.api(key).call("GET", `/v1/files?after=${b.id}`)
    expect(page.body).toEqual({ object: "list", data: [a], first_id: a.id, last_id: a.id, has_more: false })
    expect((await f.api(key).call("GET", "/v1/files?limit=0")).body.error.param).toBe("limit")
    expect((await f.api(key).call("GET", "/v1/files?order=newest")).body.error.param).toBe("order")

    expect(await (await openai.files.content(a.id)).text()).toBe(small.toString())
    const content = await openai.files.content(b.id)
    expect(content.headers.get("content-length")).toBe(String(large.length))
    expect(Buffer.from(await content.arrayBuffer()).equals(large)).toBe(true)

    expect(await openai.files.delete(a.id)).toEqual({ id: a.id, object: "file", deleted: true })
    const gone = await openai.files.retrieve(a.id).catch((e: unknown) => e)
    expect(gone).toBeInstanceOf(OpenAI.NotFoundError)
    expect(gone).toMatchObject({ status: 404, code: "file_deleted" })
    expect((gone as Error).message).toMatch(new RegExp(`File '${a.id}' was deleted at .*; its content is gone`))
    expect(await openai.files.content(a.id).catch((e: unknown) => (e as { status: number }).status)).toBe(404)
    expect(await openai.files.delete(a.id).catch((e: unknown) => (e as { code: string }).code)).toBe("file_deleted")
    expect((await openai.files.list()).data.map((x) => x.id)).toEqual([b.id])

    // The deleted file's history is its tombstone alone; the other file's parts and event are as they were.
    const messages = await rawMessages(place(), "file.")
    const ofA = messages.filter((m) => m.subject.startsWith(`file.${a.id}.`))
    expect(ofA.map((m) => m.subject)).toEqual([`file.${a.id}.file_purged`])
    const tombstone = JSON.parse(ofA[0]!.data.toString())
    expect(tombstone).toMatchObject({ type: "file_purged", file_id: a.id, account_id: "files-owner", reason: "deleted" })
    expect(Object.keys(tombstone.chain_heads).sort()).toEqual([`file.${a.id}.file_created`, `file.${a.id}.file_deleted`, `file.${a.id}.part`])
    const ofB = messages.filter((m) => m.subject.startsWith(`file.${b.id}.`))
    const parts = Math.ceil(large.length / (256 * 1024))
    expect(ofB.map((m) => m.subject)).toEqual([...Array(parts).fill(`file.${b.id}.part`), `file.${b.id}.file_created`])
    expect(ofB[0]!.headers).toMatchObject({ "ce-type": "sluice.file.part", "ce-datacontenttype": "application/octet-stream", "Sluice-Sha256": expect.any(String) })
    expect(ofB[1]!.headers["Sluice-Prev-Sha256"]).toBe(ofB[0]!.headers["Sluice-Sha256"])
    expect(Buffer.concat(ofB.slice(0, parts).map((m) => m.data)).equals(large)).toBe(true)
  })

  it("another account's file, a missing one and a batch view's id are 404 alike", async () => {
    await f.start()
    const owner = await account("files-a")
    const other = await account("files-b")
    const file = await owner.openai.files.create({ file: await toFile(Buffer.from(rows(2)), "mine.jsonl"), purpose: "batch" })
    const missing = "file-0123456789ABCDEFabcdef01"
    for (const id of [file.id, missing, "file-out-0123456789abcdef0123456789abcdef", "not-a-file"]) {
      for (const [method, path] of [["GET", `/v1/files/${id}`], ["GET", `/v1/files/${id}/content`], ["DELETE", `/v1/files/${id}`]] as const) {
        const answer = await f.api(other.key).call(method, path)
        expect(answer.status, `${method} ${path}`).toBe(404)
        expect(answer.body.error).toEqual({ message: `No file found with id '${id}'`, type: "invalid_request_error", param: null, code: "file_not_found" })
      }
    }
    expect((await other.openai.files.list()).data).toEqual([])
    expect((await owner.openai.files.retrieve(file.id)).id).toBe(file.id)
  })

  it("a bad upload is refused naming its field and leaves nothing in the log or the list", async () => {
    await f.start()
    const { key, openai } = await account("files-bad")
    const url = f.sluice.url
    const before = await fileSubjects()
    const post = async (body: Buffer | string, contentType = `multipart/form-data; boundary=${BOUNDARY}`) => {
      const response = await fetch(`${url}/v1/files`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": contentType }, body })
      return { status: response.status, body: (await response.json()) as any }
    }
    const file = (content = rows(2), filename: string | null = "rows.jsonl") => ({ name: "file", content, ...(filename === null ? {} : { filename }) })
    const cases: ReadonlyArray<readonly [string, () => Promise<{ status: number | undefined; body: any }>, number, string | null, RegExp]> = [
      ["purpose after the file, not batch", () => post(multipart([file(), { name: "purpose", content: "fine-tune" }])), 400, "purpose", /'purpose' must be 'batch'.*"fine-tune"/],
      ["no purpose", () => post(multipart([file()])), 400, "purpose", /'purpose' is required/],
      ["no file", () => post(multipart([{ name: "purpose", content: "batch" }])), 400, "file", /'file' is required/],
      ["no filename", () => post(multipart([file(rows(2), null), { name: "purpose", content: "batch" }])), 400, "file", /filename/],
      ["empty file", () => post(multipart([{ name: "purpose", content: "batch" }, file("")])), 400, "file", /empty/],
      ["two files", () => post(multipart([{ name: "purpose", content: "batch" }, file(), file()])), 400, "file", /only once/],
      ["50,001 lines", () => post(multipart([file("x\n".repeat(50_001)), { name: "purpose", content: "batch" }])), 400, "file", /more than 50000 lines/],
      ["a short expiry", () => post(multipart([{ name: "purpose", content: "batch" }, { name: "expires_after[anchor]", content: "created_at" }, { name: "expires_after[seconds]", content: "60" }, file()])), 400, "expires_after[seconds]", /from 3600/],
      ["an unknown field", () => post(multipart([{ name: "purpose", content: "batch" }, { name: "model", content: "x" }, file()])), 400, "model", /Unknown field 'model'/],
      ["JSON instead of a form", () => post(JSON.stringify({ purpose: "batch" }), "application/json"), 400, "file", /multipart\/form-data/],
      ["a truncated form", () => post(multipart([{ name: "purpose", content: "batch" }, file()]).subarray(0, 150)), 400, "file", /could not be read|Unexpected end/],
      [
        "a body declared larger than 200 MB",
        () => rawUpload(url, key, { head: Buffer.from(partHead({ name: "file", filename: "big.jsonl", content: "" })), contentLength: MAX_FILE_BYTES + 8 * 1024 * 1024 }),
        413,
        "file",
        /larger than the limit of 209715200 bytes/,
      ],
      [
        "a file streamed past 200 MB",
        () =>
          rawUpload(url, key, {
            head: Buffer.from(partHead({ name: "purpose", content: "batch" }) + "batch\r\n" + partHead({ name: "file", filename: "big.jsonl", content: "" })),
            // Lines of 4 KiB: every byte up to the limit goes to the log, and is purged once the limit is passed.
            chunks: mib(MAX_FILE_BYTES / 1024 / 1024 + 1),
            tail: Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
          }),
        413,
        "file",
        /'file' is larger than the limit of 209715200 bytes/,
      ],
    ]
    for (const [what, send, status, param, message] of cases) {
      const answer = await send()
      expect(answer.status, what).toBe(status)
      expect(answer.body?.error, what).toMatchObject({ type: "invalid_request_error", param })
      expect(answer.body.error.message, what).toMatch(message)
      expect(await fileSubjects(before), what).toEqual([])
    }
    expect((await openai.files.list()).data).toEqual([])
    // The same account uploads fine afterwards, the purpose after the file as some clients send it.
    const ok = await post(multipart([file(), { name: "purpose", content: "batch" }]))
    expect(ok.status).toBe(200)
    expect((await openai.files.list()).data.map((x) => x.id)).toEqual([ok.body.id])
  }, 120_000)

  it("parts are in the log before the upload ends, and a client gone mid-upload leaves nothing", async () => {
    await f.start()
    const { key, openai } = await account("files-gone")
    const before = await fileSubjects()
    const sent = await rawUpload(f.sluice.url, key, {
      head: Buffer.from(partHead({ name: "purpose", content: "batch" }) + "batch\r\n" + partHead({ name: "file", filename: "gone.jsonl", content: "" })),
      chunks: mib(12),
      beforeTail: async () => {
        // Memory stays bounded because the content goes to the log as it arrives, a group of parts at a time.
        await waitFor("parts are in the log", async () => (await fileSubjects(before)).filter((s) => s.endsWith(".part")).length >= 16, { timeoutMs: 20_000 })
        return "abort"
      },
    })
    expect(sent.cut).toBe(true)
    await waitFor("the parts are purged", async () => (await fileSubjects(before)).length === 0, { timeoutMs: 20_000 })
    expect((await openai.files.list()).data).toEqual([])
    const after = await openai.files.create({ file: await toFile(Buffer.from(rows(1)), "after.jsonl"), purpose: "batch" })
    expect((await openai.files.list()).data.map((x) => x.id)).toEqual([after.id])
  })

  it("a restart rebuilds the files from the log, and an expired file is purged on the actors' clock leaving its tombstone", async () => {
    const first = await f.start({ keepData: true })
    const { key } = await account("files-kept")
    const openai = () => new OpenAI({ apiKey: key, baseURL: `${f.sluice.url}/v1`, maxRetries: 0 })
    const content = Buffer.from(rows(5_000, "kept"))
    const short = await openai().files.create({ file: await toFile(content, "short.jsonl"), purpose: "batch", expires_after: { anchor: "created_at", seconds: 3600 } })
    const kept = await openai().files.create({ file: await toFile(content, "kept.jsonl"), purpose: "batch" })
    const dataDir = first.dataDir
    const at = await first.now()
    await f.stop()
    for (const name of [`read.${log}.sqlite`, `read.${log}.sqlite-wal`, `read.${log}.sqlite-shm`]) rmSync(join(dataDir, name), { force: true })
    try {
      await f.start({ dataDir, keepData: true, startAt: at })
      expect((await openai().files.list()).data).toEqual([kept, short])
      expect(Buffer.from(await (await openai().files.content(short.id)).arrayBuffer()).equals(content)).toBe(true)

      await f.sluice.adjust(HOUR - 60_000)
      expect((await openai().files.retrieve(short.id)).id).toBe(short.id)
      await f.sluice.adjust(61_000)
      await waitFor("the file expired", async () => (await f.api(key).call("GET", `/v1/files/${short.id}`)).status === 404, { timeoutMs: 20_000 })
      const gone = await f.api(key).call("GET", `/v1/files/${short.id}`)
      expect(gone.body.error).toMatchObject({ code: "file_deleted", message: expect.stringMatching(/when it expired; its content is gone$/) })
      await waitFor("only its tombstone is left", async () => (await fileSubjects()).filter((s) => s.includes(` file.${short.id}.`)).map((s) => s.split(" ")[1]).join() === `file.${short.id}.file_purged`, { timeoutMs: 20_000 })
      expect((await openai().files.list()).data).toEqual([kept])
      expect(Buffer.from(await (await openai().files.content(kept.id)).arrayBuffer()).equals(content)).toBe(true)
    } finally {
      await f.stop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it("parts no file_created names, as a crash between them leaves, are purged once silent for an hour", async () => {
    await f.start()
    const { openai } = await account("files-crashed")
    const kept = await openai.files.create({ file: await toFile(Buffer.from(rows(3)), "kept.jsonl"), purpose: "batch" })
    // What an upload cut short by a crash leaves: its parts, appended by another writer on the same log.
    const orphan = "file-CrashedUpload0123456789ab"
    const logLayer =
      f.natsUrl === undefined
        ? SqliteEventLog.layer({ path: join(f.sluice.dataDir, "log.sqlite") })
        : JetStreamEventLog.layer({ url: f.natsUrl, replicas: 1, allowOldServer: false })
    await Effect.runPromise(
      Effect.flatMap(EventLog, (eventLog) =>
        eventLog.append([0, 1].map((n) => ({ subject: `file.${orphan}.part`, data: Buffer.alloc(1000, n), msgId: `${orphan}:part:${n}` }))),
      ).pipe(Effect.provide(logLayer)),
    )
    const orphanSubjects = async () => (await fileSubjects()).filter((s) => s.includes(` file.${orphan}.`))
    expect(await orphanSubjects()).toHaveLength(2)
    await f.sluice.adjust(HOUR / 2)
    await new Promise((r) => setTimeout(r, 300))
    expect(await orphanSubjects()).toHaveLength(2)
    await f.sluice.adjust(HOUR)
    await waitFor("the orphan parts are purged", async () => (await orphanSubjects()).length === 0, { timeoutMs: 20_000 })
    expect((await openai.files.list()).data.map((x) => x.id)).toEqual([kept.id])
    expect((await fileSubjects()).filter((s) => s.includes(` file.${kept.id}.`))).toHaveLength(2)
  })
})
