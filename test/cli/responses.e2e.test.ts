import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { runCli } from "../support/cli.js"
import { client } from "../support/client.js"
import { startGatedUpstream } from "../support/gatedUpstream.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"

/*
 * `sluice responses create | get | cancel | list`, run as a process against a real server. The gated
 * model is the test's own upstream: it answers each request with its last message's text and holds
 * those that start with "hold" until the test lets them go. The simulated one fails on request.
 */

const GATED = "gated"
const SIMULATED = "simulated"
let upstream: Awaited<ReturnType<typeof startGatedUpstream>>
const f = withSluice({
  inProcess: true,
  models: async (simUrl) => {
    upstream = await startGatedUpstream()
    return [
      { id: GATED, upstream_url: upstream.url, batch_concurrency: 1, timeout_ms: 3_600_000 },
      { id: SIMULATED, upstream_url: simUrl, upstream_model: "glm-5.3-flash" },
    ]
  },
})

let dir: string
let env: Record<string, string>
let api: ReturnType<typeof client>
let flexKey: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "sluice-cli-responses-"))
  const admin = client(f.sluice.url)
  expect((await admin.admin("POST", "/admin/v1/accounts", { id: "acct-cli-responses", tier: "internal" })).status).toBe(200)
  const key = (await admin.admin("POST", "/admin/v1/accounts/acct-cli-responses/keys", {})).body.key as string
  api = client(f.sluice.url, key)
  expect((await admin.admin("POST", "/admin/v1/accounts", { id: "acct-cli-flex", tier: "internal" })).status).toBe(200)
  flexKey = (await admin.admin("POST", "/admin/v1/accounts/acct-cli-flex/keys", {})).body.key as string
  env = { SLUICE_CONFIG: join(dir, "credentials.json"), SLUICE_BASE_URL: `${f.sluice.url}/v1`, SLUICE_API_KEY: key }
})
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await upstream?.close()
})

const cli = (...args: Array<string>) => runCli(args, env, dir)
const settled = async (id: string) => {
  let last: any
  await waitFor(`response ${id} to be final`, async () => (last = (await api.call("GET", `/v1/responses/${id}`)).body).status !== "in_progress")
  return last
}
const oneLine = async (args: ReadonlyArray<string>, code: number, message: RegExp) => {
  const run = await cli(...args)
  expect(run.code, run.stderr).toBe(code)
  expect(run.stdout).toBe("")
  expect(run.stderr).toMatch(/^error: [^\n]+\n$/)
  expect(run.stderr).toMatch(message)
}

describe("sluice responses create", () => {
  it("waits for the model and prints the text it answered on stdout, a summary on stderr; --json prints the Response", async () => {
    const run = await cli("responses", "create", "--model", GATED, "--input", "hello", "--instructions", "be brief")
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toBe("echo: hello\n")
    expect(run.stderr).toMatch(/^resp_[0-9a-f]+ completed: gated, 8 tokens, created \d{4}-\d\d-\d\dT[^\n]+Z\n$/)
    expect(upstream.bodies.at(-1)).toMatchObject({ messages: [{ role: "system", content: "be brief" }, { role: "user", content: "hello" }] })

    const json = await cli("responses", "create", "--model", GATED, "--input", "as json", "--json", "--metadata", "run=7")
    expect(json.code, json.stderr).toBe(0)
    expect(JSON.parse(json.stdout)).toMatchObject({ object: "response", status: "completed", model: GATED, metadata: { run: "7" }, service_tier: "default" })

    // A flex response waits for a batch slot; on an account of its own, so that the other tests' lists stay theirs.
    const flex = await runCli(["responses", "create", "--model", GATED, "--input", "when there is room", "--service-tier", "flex", "--json"], { ...env, SLUICE_API_KEY: flexKey }, dir)
    expect(flex.code, flex.stderr).toBe(0)
    expect(JSON.parse(flex.stdout)).toMatchObject({ status: "completed", service_tier: "flex", background: false })

  })

  it("reads the input from a file: its text, or its input items when it holds a JSON array", async () => {
    const textFile = join(dir, "input.txt")
    writeFileSync(textFile, "from a file")
    const fromText = await cli("responses", "create", "--model", GATED, "--input-file", textFile)
    expect(fromText.stdout).toBe("echo: from a file\n")
    const itemsFile = join(dir, "items.json")
    writeFileSync(itemsFile, JSON.stringify([{ role: "user", content: "first" }, { role: "assistant", content: "ok" }, { role: "user", content: "second" }]))
    const fromItems = await cli("responses", "create", "--model", GATED, "--input-file", itemsFile)
    expect(fromItems.code, fromItems.stderr).toBe(0)
    expect(fromItems.stdout).toBe("echo: second\n")
    expect(upstream.bodies.at(-1)!["messages"]).toEqual([
      { role: "user", content: "first" },
      { role: "assistant", content: "ok" },
      { role: "user", content: "second" },
    ])
  })

  it("--background prints the queued response's id, which get, list and cancel then take", async () => {
    const running = await cli("responses", "create", "--model", GATED, "--input", "hold cli-running", "--background", "--custom-id", "c-1")
    expect(running.code, running.stderr).toBe(0)
    const runningId = running.stdout.trim()
    expect(runningId).toMatch(/^resp_[0-9a-f]{32}$/)
    expect(running.stderr).toBe(
      `${runningId} in_progress: gated, custom_id c-1, created ${new Date((await api.call("GET", `/v1/responses/${runningId}`)).body.created_at * 1000).toISOString()}: ` +
        `queued for a batch slot; sluice responses get --response-id ${runningId} reads it\n`,
    )
    await waitFor("the upstream to hold the running response", () => upstream.isHeld("hold cli-running"))
    const queuedId = (await cli("responses", "create", "--model", GATED, "--input", "cli-queued", "--background")).stdout.trim()

    const cancelled = await cli("responses", "cancel", "--response-id", queuedId)
    expect(cancelled.code, cancelled.stderr).toBe(0)
    expect(cancelled.stdout).toMatch(new RegExp(`^${queuedId} cancelled: gated, created [^\\n]+\\n$`))
    upstream.release("hold cli-running")
    const done = await settled(runningId)
    expect(done.status).toBe("completed")
    expect(upstream.arrived).not.toContain("cli-queued")

    const got = await cli("responses", "get", "--response-id", runningId)
    expect(got.code, got.stderr).toBe(0)
    expect(JSON.parse(got.stdout)).toEqual(done)

    // Newest first, every page: the interactive responses were never queued.
    const listed = (await api.call("GET", "/v1/responses?limit=100")).body.data as Array<any>
    expect(listed.map((r) => r.id)).toEqual([queuedId, runningId])
    const list = await cli("responses", "list")
    expect(list.code, list.stderr).toBe(0)
    const lines = list.stdout.trim().split("\n")
    expect(lines.map((l) => l.split(" ")[0])).toEqual([queuedId, runningId])
    expect(lines[0]).toBe(cancelled.stdout.trim())
    expect(lines[1]).toMatch(new RegExp(`^${runningId} completed: gated, 8 tokens, custom_id c-1, created `))
    expect((await cli("responses", "list", "--limit", "1")).stdout).toBe(`${lines[0]}\n`)
    const json = await cli("responses", "list", "--json")
    expect(json.stdout.trim().split("\n").map((l) => JSON.parse(l))).toEqual(listed)
  })

  it("a response that failed exits 3 after its summary", async () => {
    const run = await cli("responses", "create", "--model", SIMULATED, "--input", `broken ${simDirective.status(400)}`)
    expect(run.code).toBe(3)
    expect(run.stdout).toBe("")
    const [summary, error, ...rest] = run.stderr.split("\n")
    expect(summary).toMatch(/^resp_[0-9a-f]+ failed: simulated, created [^;]+; invalid_prompt: .+$/)
    expect(error).toBe(`error: response ${summary!.split(" ")[0]} failed`)
    expect(rest).toEqual([""])
  })

  it("bad arguments and refusals get one line on stderr", async () => {
    const before = (await api.call("GET", "/v1/responses?limit=100")).body.data
    await oneLine(["responses", "create", "--model", GATED], 2, /takes --input TEXT or --input-file FILE, one of them/)
    await oneLine(["responses", "create", "--model", GATED, "--input", "a", "--input-file", join(dir, "input.txt")], 2, /one of them/)
    await oneLine(["responses", "create", "--model", GATED, "--input-file", join(dir, "missing.txt")], 2, /missing\.txt/)
    await oneLine(["responses", "create", "--model", "nope", "--input", "a", "--background"], 1, /POST \S+\/v1\/responses answered 404: Model 'nope' not found$/m)
    await oneLine(["responses", "create", "--model", GATED, "--input", "a", "--stream-id", "stream_missing"], 1, /answered 404: No stream found with id 'stream_missing'/)
    await oneLine(["responses", "create", "--model", GATED, "--input", "a", "--metadata", "nokey"], 2, /--metadata 'nokey' is neither JSON nor key=value/)
    await oneLine(["responses", "create", "--model", GATED, "--input", "a", "--service-tier", "cheap"], 2, /^error: --service-tier must be one of auto, default, flex, scale, priority, got 'cheap'\n$/)
    await oneLine(["responses", "get", "--response-id", "resp_missing"], 1, /answered 404: No response found with id 'resp_missing'/)
    await oneLine(["responses", "cancel", "--response-id", "resp_missing"], 1, /answered 404: No response found with id 'resp_missing'/)
    await oneLine(["responses", "list", "--limit", "0"], 2, /--limit must be 1 or more, got 0/)
    expect((await api.call("GET", "/v1/responses?limit=100")).body.data).toEqual(before)
  })
})
