import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { runCli, SLUICE_BIN } from "../support/cli.js"
import { client } from "../support/client.js"
import { ADMIN_TOKEN, BOOTSTRAP_KEY, type Sluice, startSluice } from "../support/sluice.js"

const model = "glm-5.3-flash"
const jsonl = (lines: ReadonlyArray<unknown>) => `${lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n")}\n`

describe("the sluice CLI against a real server", () => {
  let sluice: Sluice
  let dir: string
  let env: Record<string, string>
  const file = (name: string, text: string) => {
    const path = join(dir, name)
    writeFileSync(path, text)
    return path
  }
  const cli = (...args: Array<string>) => runCli(args, env, dir)
  const api = () => client(sluice.url)
  const listedIds = async () => ((await api().call("GET", "/v1/batches?limit=100")).body.data as Array<{ id: string }>).map((b) => b.id)

  beforeAll(async () => {
    sluice = await startSluice()
    dir = mkdtempSync(join(tmpdir(), "sluice-cli-"))
    env = { SLUICE_CONFIG: join(dir, "credentials.json"), SLUICE_BASE_URL: `${sluice.url}/v1`, SLUICE_API_KEY: BOOTSTRAP_KEY }
  })
  afterAll(async () => {
    // A row held by the simulator on purpose would make a graceful stop wait for it.
    await sluice?.stop("SIGKILL")
    sluice?.cleanup()
    rmSync(dir, { recursive: true, force: true })
  })

  it("auth login stores a key only once the server accepts it, readable by its owner only", async () => {
    const config = join(dir, "login.json")
    const loginEnv = { SLUICE_CONFIG: config }
    const refused = await runCli(["auth", "login", "--api-key", "hyi-wrong", "--base-url", `${sluice.url}/v1`], loginEnv, dir)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/^error: GET \S+ answered 401: /)
    expect(existsSync(config)).toBe(false)

    const accepted = await runCli(["auth", "login", "--api-key", BOOTSTRAP_KEY, "--base-url", `${sluice.url}/v1`], loginEnv, dir)
    expect(accepted.code).toBe(0)
    expect(JSON.parse(readFileSync(config, "utf8"))).toEqual({ api_key: BOOTSTRAP_KEY, base_url: `${sluice.url}/v1` })
    expect(statSync(config).mode & 0o777).toBe(0o600)

    // With only the stored file, the next command reaches the server.
    const listed = await runCli(["batch", "list"], loginEnv, dir)
    expect(listed.code).toBe(0)
    const status = await runCli(["auth", "status"], { ...loginEnv, SLUICE_BASE_URL: "http://elsewhere:1/v1" }, dir)
    expect(status.stdout).toContain("base URL: http://elsewhere:1/v1")
  })

  it("submits a JSONL file of every line form, waits, and downloads a file equal to the results pages", async () => {
    const input = file(
      "workload.jsonl",
      jsonl([
        { custom_id: "envelope-chat", method: "POST", url: "/v1/chat/completions", body: { model, messages: [{ role: "user", content: "one" }] } },
        { custom_id: "envelope-responses", method: "POST", url: "/v1/responses", body: { model, input: [{ role: "user", content: "two" }], max_output_tokens: 64 } },
        "",
        { body: { messages: [{ role: "user", content: "bare, no id" }] } },
        { content: "content only" },
        { custom_id: "fails", body: { model, messages: [{ role: "user", content: `bad ${simDirective.status(400)}` }] } },
      ]),
    )
    const submitted = await cli("batch", "submit", "--input-file", input, "--model", model, "--metadata", "project=cli", "--metadata", "run=1")
    expect(submitted.stderr).toContain("Submitted")
    expect(submitted.code).toBe(0)
    const id = submitted.stdout.trim()
    expect(id).toMatch(/^batch_[0-9a-f]+$/)

    const waited = await cli("batch", "wait", "--batch-id", id, "--timeout", "120", "--poll-interval", "0.2")
    expect(waited.code).toBe(0)
    expect(waited.stdout).toContain(`${id} completed: 5/5 done, 1 failed`)

    const out = join(dir, "results.jsonl")
    const downloaded = await cli("batch", "download-results", "--batch-id", id, "--out", out)
    expect(downloaded.code).toBe(0)
    const lines = readFileSync(out, "utf8").split("\n")
    expect(lines.pop()).toBe("")
    const pages = await api().allResults(id, 2)
    expect(lines.map((l) => JSON.parse(l))).toEqual(pages)
    expect(pages.map((r) => r.custom_id)).toEqual(["envelope-chat", "envelope-responses", "line-4", "line-5", "fails"])
    expect(pages.map((r) => r.status)).toEqual(["completed", "completed", "completed", "completed", "failed"])
    expect(pages[3].response.body.choices[0].message.content).toContain("content only")

    const batch = JSON.parse((await cli("batch", "get", "--batch-id", id)).stdout)
    expect(batch).toMatchObject({ id, status: "completed", metadata: { project: "cli", run: "1" } })
  })

  it("reports a malformed line by its number before anything is sent", async () => {
    const before = await listedIds()
    const input = file("bad.jsonl", jsonl([{ content: "fine" }, { content: "fine too" }, "{not json"]))
    const refused = await cli("batch", "submit", "--input-file", input, "--model", model)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/line 3: /)
    expect(refused.stdout).toBe("")

    const noModel = await cli("batch", "submit", "--input-file", file("content.jsonl", jsonl([{ content: "needs a model" }])))
    expect(noModel.code).toBe(1)
    expect(noModel.stderr).toMatch(/line 1: .*model/)

    const wrongUrl = file("url.jsonl", jsonl([{ custom_id: "x", method: "POST", url: "/v1/completions", body: { model, prompt: "x" } }]))
    const refusedUrl = await cli("batch", "submit", "--input-file", wrongUrl)
    expect(refusedUrl.code).toBe(1)
    expect(refusedUrl.stderr).toMatch(/line 1: .*url/)
    expect(await listedIds()).toEqual(before)
  })

  it("splits a file over the per-batch row limit into batches and prints every id; wait's exit code says cancelled", async () => {
    const rows = Array.from({ length: 50_001 }, (_, i) => `{"content":"row ${i} ${simDirective.latency(5)}"}`)
    const submitted = await cli("batch", "submit", "--input-file", file("big.jsonl", `${rows.join("\n")}\n`), "--model", model)
    expect(submitted.code).toBe(0)
    const ids = submitted.stdout.trim().split("\n")
    expect(ids).toHaveLength(2)
    const [big, small] = ids as [string, string]
    const cancelled = await cli("batch", "cancel", "--batch-id", big)
    expect(cancelled.code).toBe(0)
    expect(cancelled.stdout).toMatch(new RegExp(`^${big} (cancelling|cancelled)`))
    const counts = await Promise.all(ids.map(async (id) => (await api().call("GET", `/v1/batches/${id}`)).body.request_counts.total))
    expect(counts).toEqual([50_000, 1])
    const results = await api().call("GET", `/v1/batches/${small}/results`)
    expect(results.body.data[0].custom_id).toBe("line-50001")

    const waited = await cli("batch", "wait", "--batch-id", big, "--timeout", "120", "--poll-interval", "0.2")
    expect(waited.code).toBe(5)
    expect(waited.stderr).toContain("ended cancelled")
  })

  it("submit --dry-run prints the estimate and creates nothing", async () => {
    const before = await listedIds()
    const input = file("dry.jsonl", jsonl([{ content: "first" }, { content: "second, a little longer" }]))
    const dry = await cli("batch", "submit", "--input-file", input, "--model", model, "--dry-run")
    expect(dry.code, dry.stderr).toBe(0)
    const estimate = JSON.parse(dry.stdout.trim())
    expect(estimate).toMatchObject({ object: "batch.estimate", request_counts: { total: 2 }, tokens: "upstream", models: [{ model, requests: 2 }] })
    expect(dry.stderr).toContain("Would submit 2 rows")
    expect(await listedIds()).toEqual(before)
  })

  it("rerun submits the rows of one error code again as a new batch, and refuses a batch that is not final", async () => {
    const input = file(
      "rerun.jsonl",
      jsonl([
        { custom_id: "ok", content: "fine" },
        { custom_id: "nf", content: `missing ${simDirective.status(404)}` },
        { custom_id: "bad", content: `invalid ${simDirective.status(400)}` },
      ]),
    )
    const original = (await cli("batch", "submit", "--input-file", input, "--model", model)).stdout.trim()
    expect((await cli("batch", "wait", "--batch-id", original, "--poll-interval", "0.1")).code).toBe(0)
    const again = await cli("batch", "rerun", "--batch-id", original, "--error-code", "model_not_found", "--metadata", "why=404s")
    expect(again.code, again.stderr).toBe(0)
    const rerunId = again.stdout.trim()
    const batch = await api().call("GET", `/v1/batches/${rerunId}`)
    expect(batch.body).toMatchObject({ rerun_of: original, metadata: { why: "404s" }, request_counts: { total: 1 } })
    expect((await api().allResults(rerunId)).map((r) => r.custom_id)).toEqual(["nf"])
    const both = await cli("batch", "rerun", "--batch-id", original, "--status", "failed,completed")
    expect((await api().allResults(both.stdout.trim())).map((r) => r.custom_id)).toEqual(["ok", "nf", "bad"])

    const held = (await cli("batch", "submit", "--input-file", file("held.jsonl", jsonl([{ content: `held ${simDirective.hang}` }])), "--model", model)).stdout.trim()
    const refused = await cli("batch", "rerun", "--batch-id", held)
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain("only a final batch")
    await cli("batch", "cancel", "--batch-id", held)
  })

  it("wait gives up after --timeout with exit code 124, naming the batch and its counts", async () => {
    const input = file("slow.jsonl", jsonl([{ content: `slow ${simDirective.latency(60_000)}` }]))
    const id = (await cli("batch", "submit", "--input-file", input, "--model", model)).stdout.trim()
    const waited = await cli("batch", "wait", "--batch-id", id, "--timeout", "0.5", "--poll-interval", "0.1")
    expect(waited.code).toBe(124)
    expect(waited.stderr).toContain(id)
    expect((await cli("batch", "cancel", "--batch-id", id)).code).toBe(0)
  })

  it("stream prints each result line as its row finishes, ending with the batch, and they are the results", async () => {
    const rows = [
      ...Array.from({ length: 30 }, (_, i) => ({ custom_id: `s-${i}`, body: { model, messages: [{ role: "user", content: `${i} ${simDirective.latency(20)}` }] } })),
      { custom_id: "s-bad", body: { model, messages: [{ role: "user", content: `x ${simDirective.status(422)}` }] } },
    ]
    const id = (await cli("batch", "submit", "--input-file", file("stream.jsonl", jsonl(rows)))).stdout.trim()
    const streamed = await cli("batch", "stream", "--batch-id", id)
    expect(streamed.code).toBe(0)
    const lines = streamed.stdout.trim().split("\n").map((l) => JSON.parse(l))
    const byId = (a: { id: string }, b: { id: string }) => Number(a.id.slice(10)) - Number(b.id.slice(10))
    expect(lines.sort(byId)).toEqual(await api().allResults(id))
    expect(lines).toHaveLength(31)
  })

  it("stream also prints the rows a cancel settled together", async () => {
    const rows = Array.from({ length: 400 }, (_, i) => ({ content: `c ${i} ${simDirective.latency(500)}` }))
    const id = (await cli("batch", "submit", "--input-file", file("cancel.jsonl", jsonl(rows)), "--model", model)).stdout.trim()
    const streaming = cli("batch", "stream", "--batch-id", id)
    expect((await cli("batch", "cancel", "--batch-id", id)).code).toBe(0)
    const streamed = await streaming
    expect(streamed.code).toBe(0)
    const lines = streamed.stdout.trim().split("\n").map((l) => JSON.parse(l))
    expect(new Set(lines.map((l) => l.id)).size).toBe(400)
    expect(lines).toHaveLength(400)
    expect(lines.filter((l) => l.status === "cancelled").length).toBeGreaterThan(0)
  })

  it("list, get and delete", async () => {
    const id = (await cli("batch", "submit", "--input-file", file("one.jsonl", jsonl([{ content: "hello" }])), "--model", model)).stdout.trim()
    expect((await cli("batch", "wait", "--batch-id", id, "--poll-interval", "0.1")).code).toBe(0)
    const listed = await cli("batch", "list", "--limit", "3", "--json")
    expect(listed.code).toBe(0)
    const batches = listed.stdout.trim().split("\n").map((l) => JSON.parse(l))
    expect(batches.length).toBeLessThanOrEqual(3)
    expect(batches[0].id).toBe(id)
    const deleted = await cli("batch", "delete", "--batch-id", id)
    expect(deleted.stdout.trim()).toBe(`Deleted ${id}`)
    const gone = await cli("batch", "get", "--batch-id", id)
    expect(gone.code).toBe(1)
    expect(gone.stderr).toMatch(/^error: GET \S+ answered 404: /)
  })

  it("admin: create an account and a key, use it, suspend, restore and revoke", async () => {
    const adminEnv = { ...env, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN }
    const account = `cli-${Math.random().toString(36).slice(2, 8)}`
    const created = await runCli(["admin", "account", "create", "--id", account, "--tier", "internal", "--concurrency", "4", "--models", `${model},qwen3.6-35b`], adminEnv, dir)
    expect(created.code).toBe(0)
    expect(JSON.parse(created.stdout)).toMatchObject({ id: account, tier: "internal", concurrency: 4, models: [model, "qwen3.6-35b"] })
    const key = JSON.parse((await runCli(["admin", "key", "create", "--account-id", account], adminEnv, dir)).stdout)
    expect(key.key).toMatch(/^sk-sluice-/)

    const asAccount = { ...env, SLUICE_API_KEY: key.key }
    expect((await runCli(["batch", "list"], asAccount, dir)).code).toBe(0)
    const suspended = await runCli(["admin", "account", "update", "--id", account, "--status", "suspended", "--concurrency", "none"], adminEnv, dir)
    expect(JSON.parse(suspended.stdout)).toMatchObject({ status: "suspended", concurrency: null })
    expect((await runCli(["batch", "list"], asAccount, dir)).code).toBe(1)
    expect((await runCli(["admin", "account", "update", "--id", account, "--status", "active"], adminEnv, dir)).code).toBe(0)
    expect((await runCli(["batch", "list"], asAccount, dir)).code).toBe(0)
    expect((await runCli(["admin", "key", "revoke", "--key-id", key.id], adminEnv, dir)).code).toBe(0)
    const revoked = await runCli(["batch", "list"], asAccount, dir)
    expect(revoked.code).toBe(1)
    expect(revoked.stderr).toMatch(/^error: GET \S+ answered 401: /)

    const badLimit = await runCli(["admin", "account", "update", "--id", account, "--concurrency", "lots"], adminEnv, dir)
    expect(badLimit.code).toBe(1)
    expect(badLimit.stderr).toContain("--concurrency takes a number")
    const noToken = await runCli(["admin", "key", "create", "--account-id", account], env, dir)
    expect(noToken.code).toBe(1)
    expect(noToken.stderr).toContain("admin token")
  })

  it("on a terminal, wait draws a progress bar with counts, rate and ETA", async () => {
    // The batch runs one row at a time until the bar has shown it running with a rate, then all at once: a
    // CLI slow to start on a busy machine still finds it running, and the test waits for no clock.
    const account = `tty-${Math.random().toString(36).slice(2, 8)}`
    expect((await api().admin("POST", "/admin/v1/accounts", { id: account, tier: "internal", concurrency: 1 })).status).toBe(200)
    const key = (await api().admin("POST", `/admin/v1/accounts/${account}/keys`, {})).body.key as string
    const asAccount = { ...env, SLUICE_API_KEY: key }
    const rows = Array.from({ length: 20 }, (_, i) => ({ content: `p ${i} ${simDirective.latency(500)}` }))
    const id = (await runCli(["batch", "submit", "--input-file", file("tty.jsonl", jsonl(rows)), "--model", model], asAccount, dir)).stdout.trim()
    // script(1) gives the command a pseudo-terminal, as an interactive shell would.
    const command = `${SLUICE_BIN} batch wait --batch-id ${id} --poll-interval 0.05`
    const waiting = spawn("script", ["-qefc", command, "/dev/null"], { env: { ...process.env, ...asAccount }, stdio: ["ignore", "pipe", "inherit"] })
    let output = ""
    const running = /\r\x1b\[2K\[#*-*\] \d+\/20 done, 0 failed, [\d.]+ rows\/s, ETA \S+ \(in_progress\)/
    const released = new Promise<void>((resolve) => {
      waiting.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString("utf8")
        if (running.test(output)) resolve()
      })
      waiting.on("exit", () => resolve())
    })
    const exited = new Promise<number | null>((resolve) => waiting.on("exit", resolve))
    await released
    expect((await api().admin("PATCH", `/admin/v1/accounts/${account}`, { concurrency: 20 })).status).toBe(200)
    expect(await exited).toBe(0)
    expect(output).toMatch(running)
    expect(output).toMatch(/\r\x1b\[2K\[#{24}\] 20\/20 done, 0 failed, [\d.]+ rows\/s \(completed\)/)
    expect(output).toContain(`${id} completed: 20/20 done, 0 failed`)
  })

  it("usage errors exit with 2", async () => {
    const run = await cli("batch", "wait")
    expect(run.code).toBe(2)
    expect(run.stdout + run.stderr).toContain("--batch-id")
  })
})
