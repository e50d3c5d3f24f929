import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { runToEnd } from "../support/processRun.js"
import { ADMIN_TOKEN } from "../support/sluice.js"
import { withSluice } from "../support/withSluice.js"
import { type Batch, type BatchOutputLine, type FileObject, SluiceAdmin, SluiceApiError, SluiceClient } from "sluice/sdk"
import { rejection } from "../support/rejection.js"

/*
 * The SDK's calls for OpenAI's file-based flow, from the package as built (dist/lib), against a real
 * server: upload, list, read and delete files, create a batch from one, read its output and error files.
 */

const MODEL = "glm-5.3-flash"

const f = withSluice({ models: (url) => [{ id: MODEL, upstream_url: url }] })
let admin: SluiceAdmin
let dir: string

beforeAll(() => {
  admin = new SluiceAdmin({ adminToken: ADMIN_TOKEN, baseUrl: `${f.sluice.url}/v1` })
  dir = mkdtempSync(join(tmpdir(), "sdk-files-"))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let accounts = 0
/** A key of a new account of its own, so that its files are its test's alone. */
const newKey = async () => {
  const id = `sdk-files-${++accounts}`
  await admin.accounts.create({ id, tier: "internal" })
  return (await admin.keys.create(id)).key
}
const newClient = async () => new SluiceClient({ apiKey: await newKey(), baseUrl: `${f.sluice.url}/v1`, retryBaseDelayMs: 10 })

const collect = async <T>(items: AsyncIterable<T>): Promise<Array<T>> => {
  const out: Array<T> = []
  for await (const item of items) out.push(item)
  return out
}

const text = async (chunks: AsyncIterable<Uint8Array>) => Buffer.concat(await collect(chunks)).toString("utf8")

const chat = (customId: string, content: string) => ({
  custom_id: customId,
  method: "POST",
  url: "/v1/chat/completions",
  body: { model: MODEL, messages: [{ role: "user", content }] },
})
const jsonl = (lines: ReadonlyArray<unknown>) => `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`

describe("files", () => {
  it("uploadFile streams a path, getFile and fileContent answer it as uploaded, deleteFile removes it", async () => {
    const client = await newClient()
    const path = join(dir, "rows.jsonl")
    const content = jsonl([chat("a", "one"), chat("b", "two")])
    writeFileSync(path, content)

    const uploaded = await client.uploadFile({ file: path })
    expect(uploaded).toMatchObject({ object: "file", filename: "rows.jsonl", purpose: "batch", bytes: Buffer.byteLength(content), status: "processed" })
    expect(uploaded.id).toMatch(/^file-/)
    expect(await client.getFile(uploaded.id)).toEqual(uploaded)
    expect(await text(client.fileContent(uploaded.id))).toBe(content)
    expect(await collect(client.outputLines(uploaded.id))).toEqual([chat("a", "one"), chat("b", "two")])

    expect(await client.deleteFile(uploaded.id)).toEqual({ id: uploaded.id, object: "file", deleted: true })
    const gone = await rejection(client.getFile(uploaded.id))
    expect(gone).toBeInstanceOf(SluiceApiError)
    expect(gone).toMatchObject({ status: 404, code: "file_deleted" })
  })

  it("uploadFile takes bytes with a filename and expiresAfterSeconds; a refused upload is a SluiceApiError naming the field", async () => {
    const client = await newClient()
    const bytes = new TextEncoder().encode(jsonl([chat("x", "bytes")]))
    const uploaded = await client.uploadFile({ file: bytes, filename: "from-memory.jsonl", expiresAfterSeconds: 7_200 })
    expect(uploaded).toMatchObject({ filename: "from-memory.jsonl", bytes: bytes.byteLength })
    expect(uploaded.expires_at! - uploaded.created_at).toBe(7_200)

    const refused = await rejection(client.uploadFile({ file: bytes, filename: "short.jsonl", expiresAfterSeconds: 60 }))
    expect(refused).toBeInstanceOf(SluiceApiError)
    expect(refused).toMatchObject({ status: 400, param: expect.stringContaining("expires_after") })
  })

  it("listFiles follows every page, newest first, or oldest first with order asc, and filters by purpose", async () => {
    const client = await newClient()
    const ids: Array<string> = []
    for (const n of [1, 2, 3]) ids.push((await client.uploadFile({ file: new TextEncoder().encode(jsonl([chat(`r${n}`, "x")])), filename: `f${n}.jsonl` })).id)

    const pages: Array<string> = []
    const listed = await collect(client.listFiles({ limit: 1 }))
    for (const file of listed) pages.push(file.id)
    expect(pages).toEqual([...ids].reverse())
    expect((await collect(client.listFiles({ limit: 2, order: "asc" }))).map((file) => file.id)).toEqual(ids)
    expect(await collect(client.listFiles({ purpose: "batch_output" }))).toEqual([])
  })
})

describe("batches from a file", () => {
  it("estimate and createBatch take input_file_id and endpoint; the final batch's output and error files read as parsed lines and download whole", async () => {
    const client = await newClient()
    const lines = [chat("ok-1", "first"), chat("bad", `refused ${simDirective.status(400)}`), chat("ok-2", "second")]
    const input = await client.uploadFile({ file: new TextEncoder().encode(jsonl(lines)), filename: "mixed.jsonl" })

    const estimate = await client.estimate({ input_file_id: input.id, endpoint: "/v1/chat/completions" })
    expect(estimate.request_counts.total).toBe(3)
    const created: Batch = await client.createBatch({ input_file_id: input.id, endpoint: "/v1/chat/completions", metadata: { run: "sdk" } })
    expect(created).toMatchObject({ endpoint: "/v1/chat/completions", input_file_id: input.id, output_file_id: null, error_file_id: null, metadata: { run: "sdk" } })
    const done = await client.waitForCompletion(created.id, { pollInterval: 50, timeout: 60_000 })
    expect(done.request_counts).toEqual({ total: 3, completed: 2, failed: 1 })
    expect(done.output_file_id).not.toBeNull()
    expect(done.error_file_id).not.toBeNull()

    const output: Array<BatchOutputLine> = await collect(client.outputLines(done.output_file_id!))
    expect(output.map((l) => l.custom_id)).toEqual(["ok-1", "ok-2"])
    for (const line of output) {
      expect(line.error).toBeNull()
      expect(line.response).toMatchObject({ status_code: 200, body: { object: "chat.completion" } })
    }
    const errors = await collect(client.outputLines(done.error_file_id!))
    expect(errors.map((l) => l.custom_id)).toEqual(["bad"])
    expect(errors[0]).toMatchObject({ response: null, error: { code: "invalid_request" } })

    const out = join(dir, "output.jsonl")
    const written = await client.downloadFile(done.output_file_id!, { out })
    const saved = readFileSync(out, "utf8")
    expect(saved).toBe(await text(client.fileContent(done.output_file_id!)))
    expect(written).toEqual({ lines: 2, bytes: Buffer.byteLength(saved) })

    const outputFile: FileObject = await client.getFile(done.output_file_id!)
    expect(outputFile).toMatchObject({ purpose: "batch_output", bytes: Buffer.byteLength(saved) })
    expect((await collect(client.listFiles({ purpose: "batch_output" }))).map((file) => file.id).sort()).toEqual(
      [done.output_file_id!, done.error_file_id!].sort(),
    )
  })

  it("createBatch with inline requests creates the batch submitBatch would, its file fields null", async () => {
    const client = await newClient()
    const created = await client.createBatch({ requests: [{ custom_id: "i", content: "inline" }], model: MODEL })
    expect(created).toMatchObject({ endpoint: "/v1/chat/completions", input_file_id: null, request_counts: { total: 1 } })
    const done = await client.waitForCompletion(created.id, { pollInterval: 50, timeout: 60_000 })
    expect(done).toMatchObject({ status: "completed", output_file_id: null, error_file_id: null })
  })

  it("a file with a bad line is refused with the line in the error, and an unknown file is a 404", async () => {
    const client = await newClient()
    const input = await client.uploadFile({ file: new TextEncoder().encode(`${JSON.stringify(chat("good", "x"))}\n{not json\n`), filename: "bad.jsonl" })
    const refused = await rejection(client.createBatch({ input_file_id: input.id, endpoint: "/v1/chat/completions" }))
    expect(refused).toMatchObject({ status: 400, detail: expect.stringMatching(/line 2/) })
    const missing = await rejection(client.createBatch({ input_file_id: "file-nosuchfile000000000000000", endpoint: "/v1/chat/completions" }))
    expect(missing).toMatchObject({ status: 404, code: "file_not_found" })
  })

  it("fileContent can be left part-way: breaking out of the loop ends the download", async () => {
    const client = await newClient()
    const big = jsonl(Array.from({ length: 4_000 }, (_, i) => chat(`row-${i}`, "x".repeat(200))))
    const input = await client.uploadFile({ file: new TextEncoder().encode(big), filename: "big.jsonl" })
    let first: Uint8Array | undefined
    for await (const chunk of client.fileContent(input.id)) {
      first = chunk
      break
    }
    expect(first!.byteLength).toBeGreaterThan(0)
    expect(first!.byteLength).toBeLessThan(Buffer.byteLength(big))
    // The connection was let go: the next call is answered as usual.
    expect((await client.getFile(input.id)).bytes).toBe(Buffer.byteLength(big))
  })
})

describe("memory", () => {
  it("a 96 MB file uploaded from its path and read back through fileContent is never held whole: the buffers and heap the process holds grow by less than a third of it", async () => {
    const key = await newKey()
    const path = join(dir, "large.jsonl")
    const line = `${JSON.stringify(chat("row", "x".repeat(2_300)))}\n`
    const lines = 40_000
    writeFileSync(path, line.repeat(lines))
    const size = Buffer.byteLength(line) * lines
    const sdk = fileURLToPath(new URL("../../dist/lib/sdk/index.js", import.meta.url))
    // A process of its own, as a user's program is: what it holds is the SDK's alone.
    const script = `
      import { SluiceClient } from ${JSON.stringify(sdk)}
      const client = new SluiceClient({ apiKey: process.env.KEY, baseUrl: process.env.BASE_URL })
      await client.getBatch("batch_warmup").catch(() => undefined)
      // What the process holds after a collection: its buffers and heap, not garbage a lazy collector has yet to free.
      const held = () => (globalThis.gc(), process.memoryUsage().arrayBuffers + process.memoryUsage().heapUsed)
      const base = held()
      let peak = base
      const sample = setInterval(() => (peak = Math.max(peak, held())), 50)
      const file = await client.uploadFile({ file: process.env.FILE })
      let bytes = 0
      for await (const chunk of client.fileContent(file.id)) bytes += chunk.byteLength
      clearInterval(sample)
      console.log(JSON.stringify({ uploaded: file.bytes, bytes, growth: peak - base }))
    `
    const run = await runToEnd(process.execPath, ["--expose-gc", "--input-type=module", "-e", script], {
      env: { PATH: process.env["PATH"] ?? "", KEY: key, BASE_URL: `${f.sluice.url}/v1`, FILE: path },
    })
    expect(run.code, run.stderr).toBe(0)
    const measured = JSON.parse(run.stdout) as { uploaded: number; bytes: number; growth: number }
    expect(measured.uploaded).toBe(size)
    expect(measured.bytes).toBe(size)
    expect(measured.growth).toBeLessThan(size / 3)
  }, 120_000)
})
