import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { runCli, SLUICE_BIN } from "../support/cli.js"
import { client } from "../support/client.js"
import { freePort } from "../support/ports.js"
import { BOOTSTRAP_KEY, type Sluice, startSluice } from "../support/sluice.js"
import { waitFor } from "../support/waitFor.js"

const model = "glm-5.3-flash"

describe("what the sluice CLI tells its user, run as a process against a real server", () => {
  let sluice: Sluice
  let dir: string
  let env: Record<string, string>
  const cli = (...args: Array<string>) => runCli(args, env, dir)
  const api = () => client(sluice.url)
  const input = (name: string, lines: ReadonlyArray<object>) => {
    const path = join(dir, name)
    writeFileSync(path, lines.map((l) => `${JSON.stringify(l)}\n`).join(""))
    return path
  }
  const submitted = async (name: string, lines: ReadonlyArray<object>) =>
    (await cli("batch", "submit", "--input-file", input(name, lines), "--model", model)).stdout.trim()
  const finished = (id: string) =>
    waitFor(`${id} completed`, async () => (await api().call("GET", `/v1/batches/${id}`)).body.status === "completed")

  beforeAll(async () => {
    sluice = await startSluice()
    dir = mkdtempSync(join(tmpdir(), "sluice-cli-messages-"))
    env = { SLUICE_CONFIG: join(dir, "credentials.json"), SLUICE_BASE_URL: `${sluice.url}/v1`, SLUICE_API_KEY: BOOTSTRAP_KEY }
  })
  afterAll(async () => {
    await sluice?.stop("SIGKILL")
    sluice?.cleanup()
    rmSync(dir, { recursive: true, force: true })
  })

  it("--metadata takes a JSON object as well as key=value pairs, and names both forms when neither parses", async () => {
    const file = input("meta.jsonl", [{ content: "hello" }])
    const json = await cli("batch", "submit", "--input-file", file, "--model", model, "--metadata", '{"project":"x","run":"7"}', "--metadata", "team=ml")
    expect(json.stderr).not.toContain("error")
    expect(json.code).toBe(0)
    const batch = (await api().call("GET", `/v1/batches/${json.stdout.trim()}`)).body
    expect(batch.metadata).toEqual({ project: "x", run: "7", team: "ml" })

    const before = (await api().call("GET", "/v1/batches?limit=100")).body.data.length
    const neither = await cli("batch", "submit", "--input-file", file, "--model", model, "--metadata", "project")
    expect(neither.code).toBe(2)
    expect(neither.stderr).toBe(
      `error: --metadata 'project' is neither JSON nor key=value; give a JSON object of strings ('{"project":"x"}') or key=value, repeatable\n`,
    )
    const badJson = await cli("batch", "submit", "--input-file", file, "--model", model, "--metadata", '{"project":')
    expect(badJson.code).toBe(2)
    expect(badJson.stderr).toMatch(/^error: --metadata '\{"project":' is not valid JSON \(.+\); give a JSON object of strings/)
    expect((await api().call("GET", "/v1/batches?limit=100")).body.data.length).toBe(before)
  })

  it("--window is accepted and ignored, as the API ignores a sent window, with a note on stderr", async () => {
    const file = input("window.jsonl", [{ content: "hello" }])
    const other = await cli("batch", "submit", "--input-file", file, "--model", model, "--window", "48h")
    expect(other.code).toBe(0)
    expect(other.stderr).toContain("--window 48h is ignored, as the API ignores a sent completion_window: the server gave 24h")
    expect((await api().call("GET", `/v1/batches/${other.stdout.trim()}`)).body.completion_window).toBe("24h")
    const same = await cli("batch", "submit", "--input-file", file, "--model", model, "--window", "24h")
    expect(same.code).toBe(0)
    expect(same.stderr).not.toContain("--window")
  })

  it("counts one row as a row", async () => {
    const one = await cli("batch", "submit", "--input-file", input("one.jsonl", [{ content: "hi" }]), "--model", model)
    expect(one.stderr).toBe(`Submitted ${one.stdout.trim()}: 1 row\n`)
    const two = await cli("batch", "submit", "--input-file", input("two.jsonl", [{ content: "a" }, { content: "b" }]), "--model", model)
    expect(two.stderr).toBe(`Submitted ${two.stdout.trim()}: 2 rows\n`)
  })

  it("wait on a batch that finished before its first poll shows neither a rate nor an ETA", async () => {
    const id = await submitted("done.jsonl", [{ content: "quick" }])
    await finished(id)
    const waited = await cli("batch", "wait", "--batch-id", id, "--poll-interval", "0.1")
    expect(waited.code).toBe(0)
    expect(waited.stderr).toBe(`${id} completed: 1/1 done, 0 failed\n`)
    expect(waited.stdout).toBe(`${id} completed: 1/1 done, 0 failed\n`)
  })

  it("wait's progress lines show the rate once measured, and no ETA on the final status", async () => {
    // Two rounds of the model's 8 slots, long enough that the first poll finds the batch unfinished.
    const rows = Array.from({ length: 12 }, (_, i) => ({ content: `r ${i} ${simDirective.latency(1_500)}` }))
    const id = await submitted("paced.jsonl", rows)
    const waited = await cli("batch", "wait", "--batch-id", id, "--poll-interval", "0.05", "--timeout", "60")
    expect(waited.code).toBe(0)
    const lines = waited.stderr.trim().split("\n")
    const last = lines[lines.length - 1]!
    // No rate before one is measured; the server's ETA and rows ahead may already be there.
    expect(lines[0]).toMatch(new RegExp(`^${id} (validating|in_progress): \\d+/12 done, 0 failed(, ETA [^,]+)?(, \\d+ rows ahead)?$`))
    expect(last).toMatch(new RegExp(`^${id} completed: 12/12 done, 0 failed, [\\d.]+ rows/s$`))
    expect(lines.slice(1).every((l) => / rows\/s/.test(l))).toBe(true)
  })

  it("a timed-out wait says to give a longer --timeout, not an SDK function", async () => {
    const id = await submitted("slow.jsonl", [{ content: `slow ${simDirective.latency(60_000)}` }])
    const waited = await cli("batch", "wait", "--batch-id", id, "--timeout", "0.3", "--poll-interval", "0.1")
    expect(waited.code).toBe(124)
    expect(waited.stderr).toMatch(new RegExp(`error: batch ${id} did not finish within --timeout 0.3: it is still \\w+, 0 of 1 requests finished`))
    expect(waited.stderr).toContain("give a longer --timeout")
    expect(waited.stderr).not.toContain("waitForCompletion")
    expect((await cli("batch", "cancel", "--batch-id", id)).code).toBe(0)
  })

  it("every error reads `error: <message>`, an API error naming the call and its status once", async () => {
    const id = await submitted("held.jsonl", [{ content: `held ${simDirective.latency(60_000)}` }])
    await waitFor(`${id}'s row running`, async () => (await api().call("GET", `/v1/batches/${id}/results`)).body.data[0].status === "running")
    const refused = await cli("batch", "delete", "--batch-id", id)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(new RegExp(`^error: DELETE ${sluice.url}/v1/batches/${id} answered 409: \\S`))
    // The batch id (random hex, twice in the message) and the port hold "409" now and then: the status is counted outside them.
    expect(refused.stderr.replaceAll(id, "").replaceAll(sluice.url, "").match(/409/g)).toHaveLength(1)
    const unknown = await cli("batch", "get", "--batch-id", "batch_nope")
    expect(unknown.stderr).toMatch(new RegExp(`^error: GET ${sluice.url}/v1/batches/batch_nope answered 404: \\S`))
    expect((await cli("batch", "cancel", "--batch-id", id)).code).toBe(0)
  })

  it("download-results --out - writes the results to standard output, and no file", async () => {
    const id = await submitted("stdout.jsonl", [{ content: "one" }, { content: "two" }])
    await finished(id)
    const before = readdirSync(dir)
    const downloaded = await cli("batch", "download-results", "--batch-id", id, "--out", "-")
    expect(downloaded.code).toBe(0)
    const expected = await fetch(`${sluice.url}/v1/batches/${id}/results.jsonl`, { headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` } })
    expect(downloaded.stdout).toBe(await expected.text())
    expect(downloaded.stdout.trim().split("\n")).toHaveLength(2)
    expect(downloaded.stderr).toMatch(/^Wrote 2 results \(\d+ bytes\) to standard output\n$/)
    expect(readdirSync(dir)).toEqual(before)
    expect(existsSync(join(dir, "-"))).toBe(false)
  })

  it("download-results into a missing folder names the path given, not a temporary file", async () => {
    const id = await submitted("nofolder.jsonl", [{ content: "one" }])
    const out = join(dir, "no-such-folder", "results.jsonl")
    const refused = await cli("batch", "download-results", "--batch-id", id, "--out", out)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toBe(`error: cannot write ${out}: the folder ${join(dir, "no-such-folder")} does not exist\n`)
    expect(refused.stderr).not.toContain(".part")
    expect(existsSync(join(dir, "no-such-folder"))).toBe(false)
  })

  it("an unreachable server: says at once that it is retrying, then gives up after two retries for a read", async () => {
    const closed = `http://127.0.0.1:${await freePort()}/v1`
    const child = spawn(SLUICE_BIN, ["batch", "list"], {
      env: { PATH: process.env["PATH"] ?? "", HOME: dir, SLUICE_API_KEY: BOOTSTRAP_KEY, SLUICE_BASE_URL: closed },
      stdio: ["ignore", "pipe", "pipe"],
    })
    let stderr = ""
    let exited: number | null | undefined
    const firstLine = new Promise<{ line: string; running: boolean }>((resolve) => {
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString()
        if (stderr.includes("\n")) resolve({ line: stderr.split("\n")[0]!, running: exited === undefined })
      })
    })
    const done = new Promise<number | null>((resolve) => child.once("close", (code) => resolve((exited = code))))
    const first = await firstLine
    // The first retry is announced while the command is still trying, not with its final error.
    expect(first.running).toBe(true)
    expect(first.line).toMatch(new RegExp(`^GET ${closed}/batches\\?limit=20 failed: .*ECONNREFUSED.*; retrying in [\\d.]+ s \\(1 of 2\\)$`))
    expect(await done).toBe(1)
    const lines = stderr.trim().split("\n")
    expect(lines).toHaveLength(3)
    expect(lines[1]).toMatch(/\(2 of 2\)$/)
    expect(lines[2]).toMatch(new RegExp(`^error: GET ${closed}/batches\\?limit=20 failed: .*ECONNREFUSED`))
  })
})
