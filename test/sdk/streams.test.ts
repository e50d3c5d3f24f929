import fc from "fast-check"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { type SseMessage, SseDecoder } from "../../src/sdk/sseDecoder.js"
import { type Reply, startScriptedServer } from "../support/scriptedServer.js"
import { type BatchStreamEvent, resultLineFromEvent, SluiceClient } from "sluice/sdk"

const decodeAll = (chunks: ReadonlyArray<string>) => {
  const decoder = new SseDecoder()
  return chunks.flatMap((c) => decoder.push(c))
}

const splitAt = (text: string, cuts: ReadonlyArray<number>) => {
  const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b)
  const parts: Array<string> = []
  let from = 0
  for (const p of points) {
    parts.push(text.slice(from, p))
    from = p
  }
  parts.push(text.slice(from))
  return parts
}

describe("SseDecoder", () => {
  it("reads ids, types, multi-line data and comments, with LF, CRLF or CR line ends", () => {
    for (const eol of ["\n", "\r\n", "\r"]) {
      const text = [": keepalive", "id: 1", "event: rows_added", 'data: {"a":1}', "", "id:2", "event:row_completed", "data: x", "data:y", "", ""].join(eol)
      expect(decodeAll([text])).toEqual([
        { id: "1", event: "rows_added", data: '{"a":1}' },
        { id: "2", event: "row_completed", data: "x\ny" },
      ])
    }
  })

  it("keeps the last id for events without one, names untyped events message, and skips events without data", () => {
    expect(decodeAll(["id: 7\nevent: a\n\ndata: 1\n\nretry: 250\nid: 8\n\n"])).toEqual([{ id: "7", event: "message", data: "1" }])
    const decoder = new SseDecoder()
    decoder.push("retry: 250\nid: 8\n\n")
    expect(decoder.retryMs).toBe(250)
    expect(decoder.lastEventId).toBe("8")
  })

  it("decodes the same events however the stream is cut into chunks", () => {
    const event = fc.record({
      id: fc.stringMatching(/^[0-9a-z-]{1,8}$/),
      event: fc.constantFrom("rows_added", "row_completed", "batch_completed"),
      data: fc.json(),
    })
    fc.assert(
      fc.property(fc.array(event, { maxLength: 8 }), fc.constantFrom("\n", "\r\n", "\r"), fc.array(fc.nat(), { maxLength: 10 }), (events, eol, cuts) => {
        const text = events.map((e) => [`: keepalive`, `id: ${e.id}`, `event: ${e.event}`, `data: ${e.data}`, "", ""].join(eol)).join("")
        const expected: Array<SseMessage> = events.map((e) => ({ id: e.id, event: e.event, data: e.data }))
        expect(decodeAll(splitAt(text, cuts))).toEqual(expected)
      }),
    )
  })

  it("holds an incomplete event back until its blank line arrives", () => {
    const decoder = new SseDecoder()
    expect(decoder.push("id: 1\nevent: a\ndata: {")).toEqual([])
    expect(decoder.push("}\n")).toEqual([])
    expect(decoder.push("\n")).toEqual([{ id: "1", event: "a", data: "{}" }])
  })
})

describe("resultLineFromEvent", () => {
  const response = { status_code: 200, request_id: "req_1", body: { id: "chatcmpl-1" } }

  it("a row outcome becomes the result line the results endpoint lists for it", () => {
    const completed = { id: "9", type: "row_completed", data: { type: "row_completed", batch_id: "b", row: 0, attempt: 1, at: 5, response, cost_usd: 0.1, custom_id: "q-1" } } as const
    expect(resultLineFromEvent(completed)).toEqual({ id: "batch_req_1", custom_id: "q-1", status: "completed", response, error: null })

    const error = { code: "rate_limited", message: "too many", status: 429 }
    const failed = { id: "10", type: "row_failed", data: { type: "row_failed", batch_id: "b", row: 41, attempt: 8, at: 5, error, custom_id: "q-42" } } as const
    expect(resultLineFromEvent(failed)).toEqual({ id: "batch_req_42", custom_id: "q-42", status: "failed", response: null, error })

    const cancelled = { id: "11", type: "row_cancelled", data: { type: "row_cancelled", batch_id: "b", row: 2, attempt: 1, at: 5, error: null, custom_id: "c" } } as const
    expect(resultLineFromEvent(cancelled)).toEqual({ id: "batch_req_3", custom_id: "c", status: "cancelled", response: null, error: null })
  })

  it("other events stand for no result line", () => {
    const started: BatchStreamEvent = { id: "1", type: "batch_started", data: { type: "batch_started", batch_id: "b", at: 1 } }
    const retrying: BatchStreamEvent = {
      id: "2",
      type: "row_retrying",
      data: { type: "row_retrying", batch_id: "b", row: 0, attempt: 1, at: 1, error: { code: "timeout", message: "t" }, retry_at: 2 },
    }
    expect(resultLineFromEvent(started)).toBeUndefined()
    expect(resultLineFromEvent(retrying)).toBeUndefined()
  })
})

let closers: Array<() => Promise<void>> = []
afterEach(async () => {
  await Promise.all(closers.map((c) => c()))
  closers = []
})
const serve = async (...replies: ReadonlyArray<Reply>) => {
  const server = await startScriptedServer(replies)
  closers.push(server.close)
  return server
}
const client = (url: string) => new SluiceClient({ apiKey: "k", baseUrl: `${url}/v1`, retryBaseDelayMs: 1, maxRetries: 2 })

const sse = (id: number, type: string, data: object) => `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

describe("streamEvents against a scripted SSE server", () => {
  it("resumes after a dropped connection with Last-Event-ID and ends when the server ends the stream", async () => {
    const server = await serve(
      (res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write(": keepalive\n\n" + sse(1, "batch_started", { at: 1 }))
        res.write(sse(2, "row_started", { row: 0 }) + "id: 3\nevent: row_comp")
        setTimeout(() => res.socket?.destroy(), 50)
      },
      (res, req) => {
        res.writeHead(req.headers["last-event-id"] === "2" ? 200 : 400, { "content-type": "text/event-stream" })
        res.end(sse(3, "row_completed", { row: 0, custom_id: "a" }) + sse(4, "batch_completed", { at: 2 }))
      },
    )
    const seen: Array<string> = []
    for await (const event of client(server.url).streamEvents("batch_x")) seen.push(`${event.id} ${event.type} ${JSON.stringify(event.data)}`)
    expect(seen).toEqual([
      '1 batch_started {"type":"batch_started","at":1}',
      '2 row_started {"type":"row_started","row":0}',
      '3 row_completed {"type":"row_completed","row":0,"custom_id":"a"}',
      '4 batch_completed {"type":"batch_completed","at":2}',
    ])
    expect(server.seen.map((r) => [r.url, r.headers.accept, r.headers["last-event-id"]])).toEqual([
      ["/v1/batches/batch_x/events", "text/event-stream", undefined],
      ["/v1/batches/batch_x/events", "text/event-stream", "2"],
    ])
  })

  it("starts after the lastEventId it is given, and gives up after maxRetries drops in a row", async () => {
    const server = await serve((res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(": keepalive\n\n")
      setTimeout(() => res.socket?.destroy(), 20)
    })
    const iterate = async () => {
      for await (const _ of client(server.url).streamEvents("b", { lastEventId: "41" })) {
        // no events come
      }
    }
    await expect(iterate()).rejects.toThrow(/GET .*\/v1\/batches\/b\/events failed/)
    expect(server.seen.map((r) => r.headers["last-event-id"])).toEqual(["41", "41", "41"])
  })
})

describe("downloadResultsJsonl against a scripted server", () => {
  let dir: string
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  const lines = Array.from({ length: 2_000 }, (_, i) => JSON.stringify({ id: `batch_req_${i + 1}`, custom_id: `c${i}`, status: "completed" }) + "\n")

  it("streams the body to the file and counts its lines and bytes", async () => {
    dir = mkdtempSync(join(tmpdir(), "sdk-download-"))
    const server = await serve((res) => {
      res.writeHead(200, { "content-type": "application/x-ndjson" })
      for (let i = 0; i < lines.length; i += 100) res.write(lines.slice(i, i + 100).join(""))
      res.end()
    })
    const out = join(dir, "results.jsonl")
    const got = await client(server.url).downloadResultsJsonl("batch_y", { out })
    expect(readFileSync(out, "utf8")).toBe(lines.join(""))
    expect(got).toEqual({ lines: 2_000, bytes: Buffer.byteLength(lines.join("")) })
    expect(readdirSync(dir)).toEqual(["results.jsonl"])
    expect(server.seen[0]?.url).toBe("/v1/batches/batch_y/results.jsonl")
  })

  it("counts a last line without its newline, and leaves neither the file nor a temporary one when the stream breaks", async () => {
    dir = mkdtempSync(join(tmpdir(), "sdk-download-"))
    const server = await serve(
      (res) => {
        res.writeHead(200, { "content-type": "application/x-ndjson" })
        res.end('{"a":1}\n{"b":2}')
      },
      (res) => {
        res.writeHead(200, { "content-type": "application/x-ndjson" })
        res.write(lines.slice(0, 10).join(""))
        setTimeout(() => res.socket?.destroy(), 20)
      },
    )
    expect(await client(server.url).downloadResultsJsonl("b", { out: join(dir, "a.jsonl") })).toEqual({ lines: 2, bytes: 15 })
    const broken = join(dir, "b.jsonl")
    await expect(client(server.url).downloadResultsJsonl("b", { out: broken })).rejects.toThrow()
    expect(existsSync(broken)).toBe(false)
    expect(readdirSync(dir)).toEqual(["a.jsonl"])
  })
})
