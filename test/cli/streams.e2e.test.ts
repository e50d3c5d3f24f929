import { createServer, type IncomingMessage, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, startCli } from "../support/cli.js"
import { client } from "../support/client.js"
import { startGatedUpstream } from "../support/gatedUpstream.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"

/*
 * `sluice stream create | list | status | submit | cancel | archive`, run as a process against a real
 * server whose model is the test's own upstream: it answers each request with its last message's text
 * and records what arrived, so a test sees how many times each line reached the model.
 */

const MODEL = "gated"
let upstream: Awaited<ReturnType<typeof startGatedUpstream>>
const f = withSluice({
  inProcess: true,
  models: async () => {
    upstream = await startGatedUpstream()
    return [{ id: MODEL, upstream_url: upstream.url, batch_concurrency: 4, timeout_ms: 3_600_000 }]
  },
})

let dir: string
let env: Record<string, string>
let api: ReturnType<typeof client>

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "sluice-cli-streams-"))
  const admin = client(f.sluice.url)
  expect((await admin.admin("POST", "/admin/v1/accounts", { id: "acct-cli-streams", tier: "internal" })).status).toBe(200)
  const key = (await admin.admin("POST", "/admin/v1/accounts/acct-cli-streams/keys", {})).body.key as string
  api = client(f.sluice.url, key)
  env = { SLUICE_CONFIG: join(dir, "credentials.json"), SLUICE_BASE_URL: `${f.sluice.url}/v1`, SLUICE_API_KEY: key }
})
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await upstream?.close()
})

const cli = (...args: Array<string>) => runCli(args, env, dir)
const file = (name: string, lines: ReadonlyArray<object>) => {
  const path = join(dir, name)
  writeFileSync(path, lines.map((l) => `${JSON.stringify(l)}\n`).join(""))
  return path
}
const stream = async (id: string) => (await api.call("GET", `/v1/streams/${id}`)).body
const newStream = async (name: string) => (await api.call("POST", "/v1/streams", { name })).body.id as string
const printed = (stdout: string) => stdout.split("\n").filter((l) => l !== "").map((l) => l.split(" ") as [string, string])
const oneLine = async (args: ReadonlyArray<string>, code: number, message: RegExp) => {
  const run = await cli(...args)
  expect(run.code, run.stderr).toBe(code)
  expect(run.stdout).toBe("")
  expect(run.stderr).toMatch(/^error: [^\n]+\n$/)
  expect(run.stderr).toMatch(message)
}

/**
 * Between the CLI and Sluice, as a network that fails part-way: the first `answered` creates go through;
 * the next `stored` reach Sluice, which stores them, but their answers never come back; later ones are
 * held and never sent on. Everything else passes.
 */
const startLossyProxy = async (target: string, answered: number, stored: number) => {
  let creates = 0
  let storedDone = 0
  const read = async (req: IncomingMessage) => {
    const chunks: Array<Buffer> = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks)
  }
  const server: Server = createServer(async (req, res) => {
    const body = await read(req)
    const n = req.method === "POST" && req.url === "/v1/responses" ? ++creates : 0
    if (n > answered + stored) return
    const forwarded = await fetch(`${target}${req.url}`, {
      method: req.method!,
      headers: { authorization: req.headers.authorization ?? "", "content-type": req.headers["content-type"] ?? "application/json" },
      ...(body.length === 0 ? {} : { body }),
    })
    const text = await forwarded.text()
    if (n > answered) {
      storedDone++
      return
    }
    res.writeHead(forwarded.status, { "content-type": forwarded.headers.get("content-type") ?? "application/json" }).end(text)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    creates: () => creates,
    storedDone: () => storedDone,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

describe("sluice stream", () => {
  it("create, list, status, cancel and archive, each with --json", async () => {
    const created = await cli("stream", "create", "--name", "nightly evals", "--window", "1h")
    expect(created.code, created.stderr).toBe(0)
    const id = created.stdout.trim()
    expect(id).toMatch(/^stream_[0-9a-f]+$/)
    const made = await stream(id)
    expect(made).toMatchObject({ name: "nightly evals", window: "1h", status: "open" })
    expect(created.stderr).toBe(`Created ${id} open, window 1h: "nightly evals", created ${made.created_at}\n`)
    const other = JSON.parse((await cli("stream", "create", "--name", "other", "--json")).stdout)
    expect(other).toEqual(await stream(other.id))
    expect(other.window).toBe("24h")

    const listed = (await api.call("GET", "/v1/streams")).body.items as Array<any>
    const list = await cli("stream", "list")
    expect(list.code, list.stderr).toBe(0)
    expect(list.stdout.trim().split("\n").map((l) => l.split(" ")[0])).toEqual(listed.map((s) => s.id))
    expect(list.stdout).toContain(`${id} open, window 1h: "nightly evals", created ${made.created_at}\n`)
    expect((await cli("stream", "list", "--json")).stdout.trim().split("\n").map((l) => JSON.parse(l))).toEqual(listed)

    const item = await api.call("POST", "/v1/responses", { model: MODEL, input: "status item", metadata: { stream_id: id, custom_id: "s" } })
    await waitFor("the item to complete", async () => (await stream(id)).completed_items === 1)
    const status = await cli("stream", "status", "--stream-id", id)
    expect(status.code, status.stderr).toBe(0)
    const detail = await stream(id)
    expect(status.stdout).toBe(
      `${id} open, window 1h: "nightly evals", created ${made.created_at}\n` +
        `1 item: 0 pending, 0 running, 1 completed, 0 failed, 0 cancelled (1 settled); 8 tokens (5 prompt, 3 completion); ` +
        `last completion ${detail.last_completion_at}, ${detail.latest_completion_id}\n`,
    )
    expect(JSON.parse((await cli("stream", "status", "--stream-id", id, "--json")).stdout)).toEqual(detail)
    expect(item.body.metadata.custom_id).toBe("s")

    const cancelled = await cli("stream", "cancel", "--stream-id", id)
    expect(cancelled.code, cancelled.stderr).toBe(0)
    expect(cancelled.stdout).toMatch(new RegExp(`^${id} cancelled, window 1h: "nightly evals", created \\S+\\n1 item: `))
    const archived = await cli("stream", "archive", "--stream-id", id, "--json")
    expect(JSON.parse(archived.stdout)).toEqual(await stream(id))
    expect(JSON.parse(archived.stdout).status).toBe("archived")
  })

  it("submit sends each line once, named by its custom_id; run again, it sends nothing and says so", async () => {
    const id = await newStream("submit")
    const input = file("lines.jsonl", [
      { custom_id: "chat", body: { messages: [{ role: "user", content: "a chat line" }], max_tokens: 5 } },
      { content: "a content line" },
      { custom_id: "responses", url: "/v1/responses", method: "POST", body: { input: "a responses line" } },
    ])
    const first = await cli("stream", "submit", "--stream-id", id, "--input-file", input, "--model", MODEL, "--metadata", "run=1")
    expect(first.code, first.stderr).toBe(0)
    const sent = printed(first.stdout)
    expect(sent.map(([, customId]) => customId).sort()).toEqual(["chat", "line-2", "responses"])
    expect(first.stderr).toBe(`Sending 3 lines to ${id}\nSent 3 lines to ${id}\n`)
    await waitFor("the items to complete", async () => (await stream(id)).completed_items === 3)
    const items = (await api.call("GET", `/v1/responses?stream_id=${id}`)).body.data as Array<any>
    expect(items.map((r) => [r.id, r.metadata.custom_id, r.metadata.run]).sort()).toEqual(
      sent.map(([responseId, customId]) => [responseId, customId, "1"]).sort(),
    )
    expect(upstream.bodies.find((b) => JSON.stringify(b).includes("a chat line"))).toMatchObject({
      messages: [{ role: "user", content: "a chat line" }],
      max_tokens: 5,
    })

    const again = await cli("stream", "submit", "--stream-id", id, "--input-file", input, "--model", MODEL)
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toBe("")
    expect(again.stderr).toBe(`${id} holds 3 of the 3 lines already: sending 0\nSent 0 lines to ${id}; 3 were there already\n`)
    expect((await stream(id)).total_items).toBe(3)

    const json = await cli("stream", "submit", "--stream-id", id, "--input-file", file("one.jsonl", [{ custom_id: "json", content: "a json line" }]), "--model", MODEL, "--json")
    expect(json.code, json.stderr).toBe(0)
    expect(JSON.parse(json.stdout)).toMatchObject({ object: "response", status: "in_progress", metadata: { stream_id: id, custom_id: "json" } })
  })

  it("killed while its creates are in flight, some stored whose answers never came, run again: each line reaches the model once", async () => {
    const id = await newStream("killed")
    const texts = Array.from({ length: 20 }, (_, i) => `killed line ${i}`)
    const input = file("killed.jsonl", texts.map((content) => ({ content })))
    const [answered, stored, concurrency] = [6, 2, 4]
    const proxy = await startLossyProxy(f.sluice.url, answered, stored)
    try {
      const first = startCli(["stream", "submit", "--stream-id", id, "--input-file", input, "--model", MODEL, "--concurrency", String(concurrency)], {
        ...env,
        SLUICE_BASE_URL: `${proxy.url}/v1`,
      }, dir)
      // Every one of its four sends waits: two stored with their answers lost, two never sent on.
      await waitFor("the run to be stuck with its creates in flight", () => proxy.creates() === answered + concurrency && proxy.storedDone() === stored)
      first.kill("SIGKILL")
      const killed = await first.ended
      expect(killed.code).toBe(null)
      const before = printed(killed.stdout)
      expect(before).toHaveLength(answered)
      expect((await stream(id)).total_items).toBe(answered + stored)

      const second = await cli("stream", "submit", "--stream-id", id, "--input-file", input, "--model", MODEL, "--concurrency", String(concurrency))
      expect(second.code, second.stderr).toBe(0)
      const rest = 20 - answered - stored
      expect(second.stderr).toBe(`${id} holds ${answered + stored} of the 20 lines already: sending ${rest}\nSent ${rest} lines to ${id}; ${answered + stored} were there already\n`)
      const after = printed(second.stdout)
      expect(after).toHaveLength(rest)
      const customIds = [...before, ...after].map(([, customId]) => customId)
      expect(new Set(customIds).size).toBe(answered + rest)

      await waitFor("every item to complete", async () => (await stream(id)).completed_items === 20)
      const detail = await stream(id)
      expect(detail).toMatchObject({ total_items: 20, completed_items: 20, pending_items: 0, failed_items: 0 })
      const items = (await api.call("GET", `/v1/responses?stream_id=${id}&limit=100`)).body.data as Array<any>
      expect(items.map((r) => r.metadata.custom_id).sort()).toEqual(texts.map((_, i) => `line-${i + 1}`).sort())
      for (const text of texts) expect(upstream.arrived.filter((t) => t === text), text).toHaveLength(1)
    } finally {
      await proxy.close()
    }
  })

  it("bad arguments, bad lines and refusals get one line on stderr", async () => {
    const id = await newStream("refusals")
    const fine = file("fine.jsonl", [{ content: "fine" }])
    await oneLine(["stream", "create", "--name", "x", "--window", "2h"], 2, /^error: --window must be one of 15m, 1h, 24h, got '2h'\n$/)
    await oneLine(["stream", "status", "--stream-id", "stream_missing"], 1, /answered 404: No stream found with id 'stream_missing'/)
    await oneLine(["stream", "submit", "--stream-id", id, "--input-file", fine], 1, /fine\.jsonl: line 1: a content-only line needs a model/)
    writeFileSync(join(dir, "broken.jsonl"), `{"content":"ok"}\n{not json\n`)
    await oneLine(["stream", "submit", "--stream-id", id, "--input-file", join(dir, "broken.jsonl"), "--model", MODEL], 1, /broken\.jsonl: line 2: not valid JSON/)
    const named = file("named.jsonl", [{ content: "ok" }, { body: { messages: [{ role: "function", content: "x" }] } }])
    await oneLine(["stream", "submit", "--stream-id", id, "--input-file", named, "--model", MODEL], 1, /named\.jsonl: line 2: messages\[0\]\.role must be one of/)
    await oneLine(["stream", "submit", "--stream-id", id, "--input-file", fine, "--model", MODEL, "--concurrency", "0"], 2, /--concurrency must be from 1 to 64, got 0/)
    await oneLine(["stream", "submit", "--stream-id", "stream_missing", "--input-file", fine, "--model", MODEL], 1, /answered 404: No stream found/)
    expect((await stream(id)).total_items).toBe(0)

    const refused = await cli("stream", "submit", "--stream-id", id, "--input-file", file("model.jsonl", [{ content: "ok", custom_id: "unknown" }]), "--model", "nope")
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/^Sending 1 line to stream_\S+\nerror: \S+model\.jsonl: line 1 \(custom_id "unknown"\): POST \S+ answered 404: Model 'nope' not found; 0 lines sent, 0 in the stream already: run again to send the rest\n$/)

    expect((await cli("stream", "archive", "--stream-id", id)).code).toBe(0)
    await oneLine(["stream", "cancel", "--stream-id", id], 1, /answered 409: Stream '\S+' is archived: an archived stream is final and takes no change/)
    const closed = await cli("stream", "submit", "--stream-id", id, "--input-file", fine, "--model", MODEL)
    expect(closed.code).toBe(1)
    expect(closed.stderr).toBe(`error: Stream '${id}' is archived and takes no new items: 1 line of the input is not in it\n`)
  })
})
