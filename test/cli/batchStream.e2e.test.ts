import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { runCli, startCli } from "../support/cli.js"
import { BOOTSTRAP_KEY } from "../support/sluice.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"

/*
 * `sluice batch stream --input-file`, run as a process against a real server whose actors run on a
 * TestClock: a row answered 503 once waits for its retry until the test moves the clock, so the batch
 * is still running for as long as the test needs (to kill the CLI, to cancel the batch), whatever the
 * machine's speed.
 */

const MODEL = "glm-5.3-flash"
const OTHER = "qwen3.6-35b"
// Past the longest backoff (60 s and its jitter): the retry a 503 scheduled is due.
const PAST_ANY_BACKOFF_MS = 5 * 60_000

const f = withSluice({
  models: (url) => [
    { id: MODEL, upstream_url: url, batch_concurrency: 2 },
    { id: OTHER, upstream_url: url, batch_concurrency: 2 },
  ],
  sluice: { testClock: {} },
})

let dir: string
let env: Record<string, string>
let runs = 0

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "sluice-cli-stream-"))
  env = { SLUICE_CONFIG: join(dir, "credentials.json"), SLUICE_BASE_URL: `${f.sluice.url}/v1`, SLUICE_API_KEY: BOOTSTRAP_KEY }
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const cli = (...args: Array<string>) => runCli(args, env, dir)
/** A JSONL file of content-only lines; each call's texts are its own, so the simulator's per-text counters start afresh. */
const input = (name: string, texts: ReadonlyArray<string>) => {
  const run = ++runs
  const path = join(dir, name)
  writeFileSync(path, texts.map((t) => `${JSON.stringify({ custom_id: `${name}-${texts.indexOf(t)}`, content: `run ${run}: ${t}` })}\n`).join(""))
  return path
}
const batchIds = async () => ((await f.api().call("GET", "/v1/batches?limit=100")).body.data as Array<{ id: string }>).map((b) => b.id)
const batch = async (id: string) => (await f.api().call("GET", `/v1/batches/${id}`)).body
const submittedId = (stderr: string) => /(?:Submitted|Resuming) (batch_[0-9a-f]+)/.exec(stderr)?.[1]
const jsonLines = (stdout: string) => stdout.trimEnd().split("\n").map((l) => JSON.parse(l))
const answered = (status: number) => f.sim.stats().answered[status] ?? 0

describe("sluice batch stream --input-file", () => {
  it("prints every result line on stdout and status on stderr, exit 0 for a completed batch even with a failed row", async () => {
    const file = input("done", ["one", "two", `three ${simDirective.status(400)}`])
    const before = await batchIds()
    const run = await cli("batch", "stream", "--input-file", file, "--model", MODEL, "--poll-interval", "0.05")
    expect(run.code, run.stderr).toBe(0)
    const id = submittedId(run.stderr)!
    expect(await batchIds()).toEqual([id, ...before])
    const lines = jsonLines(run.stdout)
    expect(lines).toEqual(await f.api().allResults(id))
    expect(lines.map((l) => [l.custom_id, l.status])).toEqual([
      ["done-0", "completed"],
      ["done-1", "completed"],
      ["done-2", "failed"],
    ])
    const stderr = run.stderr.trimEnd().split("\n")
    expect(stderr[0]).toBe(`Submitted ${id}: 3 rows`)
    expect(stderr.at(-1)).toBe(`${id} completed: 3/3 done, 1 failed`)

    // The --batch-id form follows the same batch's events: the same lines, in the order their rows ended.
    const followed = await cli("batch", "stream", "--batch-id", id)
    expect(followed.code, followed.stderr).toBe(0)
    const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id)
    expect(jsonLines(followed.stdout).sort(byId)).toEqual([...lines].sort(byId))
  })

  it("a run killed while its batch runs, started again with the same file, follows the same batch and no row runs twice", async () => {
    const file = input("resume", ["a", "b", "c", `flaky ${simDirective.fail(1, 503)}`])
    const before = await batchIds()
    const [received, ok, unavailable] = [f.sim.stats().received, answered(200), answered(503)]

    const first = startCli(["batch", "stream", "--input-file", file, "--model", MODEL, "--poll-interval", "0.05"], env, dir)
    await waitFor("the first run to submit", () => submittedId(first.stderr()) !== undefined)
    const id = submittedId(first.stderr())!
    // Three rows done, one waiting for a retry the clock has not reached: the batch runs on.
    await waitFor("the first run to see three rows done", () => first.stderr().includes(`${id} in_progress: 3/4 done`))
    first.kill("SIGKILL")
    const killed = await first.ended
    expect(killed.code).toBe(null)
    expect(killed.stdout).toBe("")
    expect(await batch(id)).toMatchObject({ status: "in_progress", request_counts: { total: 4, completed: 3, failed: 0 } })

    const second = startCli(["batch", "stream", "--input-file", file, "--model", MODEL, "--poll-interval", "0.05"], env, dir)
    await waitFor("the second run to find the batch", () => submittedId(second.stderr()) !== undefined)
    expect(second.stderr()).toMatch(new RegExp(`^Resuming ${id} \\(in_progress\\), submitted earlier from the same input: 4 rows\\n`))
    await f.sluice.adjust(PAST_ANY_BACKOFF_MS)
    const resumed = await second.ended
    expect(resumed.code, resumed.stderr).toBe(0)
    const lines = jsonLines(resumed.stdout)
    expect(lines).toEqual(await f.api().allResults(id))
    expect(lines.map((l) => l.status)).toEqual(["completed", "completed", "completed", "completed"])
    expect(resumed.stderr.trimEnd().split("\n").at(-1)).toBe(`${id} completed: 4/4 done, 0 failed`)

    expect(await batchIds()).toEqual([id, ...before])
    // Each row reached the model once, and the flaky one once more for its retry.
    expect(f.sim.stats().received - received).toBe(5)
    expect(answered(200) - ok).toBe(4)
    expect(answered(503) - unavailable).toBe(1)
  })

  it("the same file again answers its batch; another --model, other bytes or --metadata make new batches", async () => {
    const file = input("keys", ["x", "y"])
    const stream = (...args: Array<string>) => cli("batch", "stream", "--input-file", file, "--poll-interval", "0.05", ...args)
    const before = await batchIds()

    const first = await stream("--model", MODEL)
    expect(first.code, first.stderr).toBe(0)
    const id = submittedId(first.stderr)!
    const again = await stream("--model", MODEL)
    expect(again.code).toBe(0)
    expect(again.stderr).toMatch(new RegExp(`^Resuming ${id} \\(completed\\)`))
    expect(again.stdout).toBe(first.stdout)

    const otherModel = await stream("--model", OTHER)
    expect(otherModel.stderr).toMatch(/^Submitted /)
    const byModel = submittedId(otherModel.stderr)!
    expect(jsonLines(otherModel.stdout).map((l) => l.response.body.model)).toEqual([OTHER, OTHER])

    const withMetadata = await stream("--model", MODEL, "--metadata", "run=2")
    expect(withMetadata.stderr).toMatch(/^Submitted /)
    const byMetadata = submittedId(withMetadata.stderr)!

    // The same rows, one byte more: a new batch.
    appendFileSync(file, "\n")
    const otherBytes = await stream("--model", MODEL)
    expect(otherBytes.stderr).toMatch(/^Submitted /)
    const byBytes = submittedId(otherBytes.stderr)!

    expect(new Set([id, byModel, byMetadata, byBytes]).size).toBe(4)
    expect(await batchIds()).toEqual([byBytes, byMetadata, byModel, id, ...before])
  })

  it("a batch cancelled while it runs: every result line is printed and the exit code says cancelled", async () => {
    const file = input("cancel", ["fine", `waits for its retry ${simDirective.fail(1, 503)}`])
    const running = startCli(["batch", "stream", "--input-file", file, "--model", MODEL, "--poll-interval", "0.05"], env, dir)
    await waitFor("the run to submit", () => submittedId(running.stderr()) !== undefined)
    const id = submittedId(running.stderr())!
    await waitFor("the first row to be done", async () => (await batch(id)).request_counts.completed === 1)
    expect((await f.api().call("POST", `/v1/batches/${id}/cancel`)).status).toBe(200)

    const ended = await running.ended
    expect(ended.code).toBe(5)
    expect(jsonLines(ended.stdout).map((l) => [l.custom_id, l.status])).toEqual([
      ["cancel-0", "completed"],
      ["cancel-1", "cancelled"],
    ])
    const stderr = ended.stderr.trimEnd().split("\n")
    expect(stderr.slice(-2)).toEqual([`${id} cancelled: 1/2 done, 0 failed`, `error: batch ${id} ended cancelled`])
  })

  it("bad arguments get one line on stderr and submit nothing", async () => {
    const file = input("args", ["fine"])
    const before = await batchIds()
    const oneLine = async (args: ReadonlyArray<string>, code: number, message: RegExp) => {
      const run = await cli("batch", "stream", ...args)
      expect(run.code, run.stderr).toBe(code)
      expect(run.stdout).toBe("")
      expect(run.stderr).toMatch(/^error: [^\n]+\n$/)
      expect(run.stderr).toMatch(message)
    }
    await oneLine([], 2, /needs --batch-id ID \(follow a batch\) or --input-file FILE/)
    await oneLine(["--batch-id", "batch_0", "--input-file", file], 2, /--batch-id or --input-file, not both/)
    await oneLine(["--batch-id", "batch_0", "--model", MODEL], 2, /--model goes with --input-file, not --batch-id/)
    await oneLine(["--input-file", file, "--model", MODEL, "--poll-interval", "0"], 2, /--poll-interval must be more than 0 seconds/)
    await oneLine(["--input-file", join(dir, "missing.jsonl"), "--model", MODEL], 2, /missing\.jsonl/)
    await oneLine(["--input-file", file], 1, /line 1: a content-only line needs a model/)
    const badLine = join(dir, "bad.jsonl")
    writeFileSync(badLine, `{"content":"fine"}\n{not json\n`)
    await oneLine(["--input-file", badLine, "--model", MODEL], 1, /bad\.jsonl: line 2: /)
    await oneLine(["--input-file", file, "--model", "no-such-model"], 1, /answered 400: .*no-such-model/)
    expect(await batchIds()).toEqual(before)
  })

  it("--help shows both forms", async () => {
    const help = await cli("batch", "stream", "--help")
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^\$ sluice batch stream \[--batch-id text\] \[--input-file file\] \[--model text\]/m)
    expect(help.stdout).toContain("--batch-id ID: each line as its row finishes")
    expect(help.stdout).toContain("run again with the same file and options, it resumes the same batch")
  })
})
