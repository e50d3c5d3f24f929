import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { runCli, SLUICE_BIN } from "../support/cli.js"
import { runToEnd } from "../support/processRun.js"
import { client } from "../support/client.js"
import { withSluice } from "../support/withSluice.js"

/*
 * `sluice files …` and the file-based forms of `sluice batch submit` and `download-results`, run as
 * processes from the built CLI against a real server over loopback.
 */

const CHAT = "glm-5.3-flash"
const EMBED = "embed-small"

const f = withSluice({
  inProcess: true,
  models: (url) => [
    { id: CHAT, upstream_url: url },
    { id: EMBED, upstream_url: url, endpoints: ["/v1/embeddings"] },
  ],
})

let dir: string
let accounts = 0

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "sluice-cli-files-"))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A CLI and an API client of a new account of its own, so that its files are its test's alone. */
const account = async () => {
  const id = `cli-files-${++accounts}`
  const admin = client(f.sluice.url)
  expect((await admin.admin("POST", "/admin/v1/accounts", { id, tier: "internal" })).status).toBe(200)
  const key = (await admin.admin("POST", `/admin/v1/accounts/${id}/keys`, {})).body.key as string
  const env = { SLUICE_CONFIG: join(dir, "credentials.json"), SLUICE_BASE_URL: `${f.sluice.url}/v1`, SLUICE_API_KEY: key }
  return { cli: (...args: Array<string>) => runCli(args, env, dir), api: client(f.sluice.url, key), env }
}

const file = (name: string, text: string) => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}
const jsonl = (lines: ReadonlyArray<unknown>) => `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`
const chat = (customId: string, content: string) => ({
  custom_id: customId,
  method: "POST",
  url: "/v1/chat/completions",
  body: { model: CHAT, messages: [{ role: "user", content }] },
})
const embed = (customId: string, input: string) => ({ custom_id: customId, method: "POST", url: "/v1/embeddings", body: { model: EMBED, input } })

type Cli = Awaited<ReturnType<typeof account>>["cli"]
const oneLine = async (cli: Cli, args: ReadonlyArray<string>, code: number, message: RegExp) => {
  const run = await cli(...args)
  expect(run.code, run.stderr).toBe(code)
  expect(run.stdout).toBe("")
  expect(run.stderr).toMatch(/^error: [^\n]+\n$/)
  expect(run.stderr).toMatch(message)
}

const ok = async (cli: Cli, ...args: Array<string>) => {
  const run = await cli(...args)
  expect(run.code, run.stderr).toBe(0)
  return run
}

describe("sluice files", () => {
  it("upload prints the id, and list, get, content and delete answer the file as uploaded", async () => {
    const { cli, api } = await account()
    const text = jsonl([chat("a", "one"), chat("b", "two")])
    const path = file("rows.jsonl", text)

    const uploaded = await ok(cli, "files", "upload", path)
    const id = uploaded.stdout.trim()
    expect(id).toMatch(/^file-[A-Za-z0-9]+$/)
    const object = (await api.call("GET", `/v1/files/${id}`)).body
    expect(object).toMatchObject({ filename: "rows.jsonl", purpose: "batch", bytes: Buffer.byteLength(text) })
    expect(uploaded.stderr).toBe(
      `Uploaded ${id} batch: "rows.jsonl", ${Buffer.byteLength(text)} bytes, created ${new Date(object.created_at * 1000).toISOString()}, ` +
        `expires ${new Date(object.expires_at * 1000).toISOString()}\n`,
    )

    const second = (await ok(cli, "files", "upload", path, "--expires-after", "7200", "--json")).stdout
    const secondObject = JSON.parse(second)
    expect(secondObject.expires_at - secondObject.created_at).toBe(7_200)

    const listed = await ok(cli, "files", "list")
    expect(listed.stdout.trim().split("\n").map((l) => l.split(" ")[0])).toEqual([secondObject.id, id])
    expect((await ok(cli, "files", "list", "--limit", "1", "--json")).stdout.trim().split("\n").map((l) => JSON.parse(l).id)).toEqual([secondObject.id])
    expect((await ok(cli, "files", "list", "--purpose", "batch_output")).stdout).toBe("")

    expect(JSON.parse((await ok(cli, "files", "get", id)).stdout)).toEqual(object)
    expect((await ok(cli, "files", "content", id)).stdout).toBe(text)
    const saved = join(dir, "saved.jsonl")
    const written = await ok(cli, "files", "content", id, "-o", saved)
    expect(written.stdout).toBe("")
    expect(written.stderr).toBe(`Wrote ${Buffer.byteLength(text)} bytes (2 lines) of ${id} to ${saved}\n`)
    expect(readFileSync(saved, "utf8")).toBe(text)
    const before = join(dir, "option-first.jsonl")
    await ok(cli, "files", "content", "--output", before, id)
    expect(readFileSync(before, "utf8")).toBe(text)

    expect((await ok(cli, "files", "delete", id)).stdout).toBe(`Deleted ${id}\n`)
    await oneLine(cli, ["files", "get", id], 1, new RegExp(`answered 404: File '${id}' was deleted at`))
    expect((await ok(cli, "files", "list")).stdout.trim().split("\n").map((l) => l.split(" ")[0])).toEqual([secondObject.id])
  })

  it("bad input is one line on stderr: a missing path or id, a bad option, an unknown file, a folder that is not there", async () => {
    const { cli } = await account()
    const path = file("one.jsonl", jsonl([chat("a", "one")]))
    await oneLine(cli, ["files", "upload", join(dir, "absent.jsonl")], 2, /absent\.jsonl' must exist/)
    await oneLine(cli, ["files", "upload", path, "--expires-after", "60"], 2, /--expires-after must be from 3600 to 2592000 seconds .*got 60/)
    await oneLine(cli, ["files", "upload", path, "--purpose", "fine-tune"], 2, /--purpose must be one of batch, got 'fine-tune'/)
    await oneLine(cli, ["files", "get"], 2, /Missing argument <id>/)
    await oneLine(cli, ["files", "nope"], 2, /^error: 'sluice files' has no command 'nope'; it has upload, list, get, content, delete \(see sluice files --help\)\n$/)
    await oneLine(cli, ["files", "list", "--purpose", "assistants"], 2, /--purpose must be one of batch, batch_output, got 'assistants'/)
    await oneLine(cli, ["files", "get", "file-nosuchfile"], 1, /answered 404: No file found with id 'file-nosuchfile'/)
    await oneLine(cli, ["files", "content", "file-nosuchfile"], 1, /answered 404: No file found with id 'file-nosuchfile'/)
    await oneLine(cli, ["files", "delete", "file-nosuchfile"], 1, /answered 404/)
    const id = (await ok(cli, "files", "upload", path)).stdout.trim()
    await oneLine(cli, ["files", "content", id, "-o", join(dir, "no-such-folder", "out.jsonl")], 1, /cannot write .*out\.jsonl: the folder .*no-such-folder does not exist/)
  })
})

describe("sluice batch submit --as-file", () => {
  it("uploads the file and creates the batch from it; get shows its endpoint and files, download-results writes them", async () => {
    const { cli, api } = await account()
    const lines = [chat("ok-1", "first"), chat("bad", `refused ${simDirective.status(400)}`), chat("ok-2", "second")]
    const input = file("mixed.jsonl", jsonl(lines))

    const submitted = await ok(cli, "batch", "submit", "--input-file", input, "--as-file", "--metadata", "run=cli")
    const batchId = submitted.stdout.trim()
    expect(batchId).toMatch(/^batch_[0-9a-f]+$/)
    const created = (await api.call("GET", `/v1/batches/${batchId}`)).body
    expect(created).toMatchObject({ endpoint: "/v1/chat/completions", metadata: { run: "cli" } })
    const fileId = created.input_file_id as string
    expect(submitted.stderr).toMatch(new RegExp(`^Uploaded ${fileId} batch: "mixed.jsonl", `))
    expect(submitted.stderr).toContain(`Submitted ${batchId}: 3 rows from ${fileId}, each calling /v1/chat/completions\n`)
    expect((await api.call("GET", `/v1/files/${fileId}/content`)).text).toBe(jsonl(lines))

    const waited = await ok(cli, "batch", "wait", "--batch-id", batchId, "--poll-interval", "0.1", "--timeout", "60")
    const done = (await api.call("GET", `/v1/batches/${batchId}`)).body
    expect(done).toMatchObject({ status: "completed", request_counts: { total: 3, completed: 2, failed: 1 } })
    expect(waited.stderr).toContain(
      `Output file ${done.output_file_id}, error file ${done.error_file_id}: ` +
        `sluice batch download-results --batch-id ${batchId} --output-file output.jsonl --error-file errors.jsonl\n`,
    )

    const got = JSON.parse((await ok(cli, "batch", "get", "--batch-id", batchId)).stdout)
    expect(got).toMatchObject({ endpoint: "/v1/chat/completions", input_file_id: fileId, output_file_id: done.output_file_id, error_file_id: done.error_file_id })

    const output = join(dir, "output.jsonl")
    const errors = join(dir, "errors.jsonl")
    const results = join(dir, "results.jsonl")
    const downloaded = await ok(cli, "batch", "download-results", "--batch-id", batchId, "--output-file", output, "--error-file", errors, "--out", results)
    expect(readFileSync(output, "utf8")).toBe((await api.call("GET", `/v1/files/${done.output_file_id}/content`)).text)
    expect(readFileSync(errors, "utf8")).toBe((await api.call("GET", `/v1/files/${done.error_file_id}/content`)).text)
    expect(readFileSync(output, "utf8").trim().split("\n").map((l) => JSON.parse(l).custom_id)).toEqual(["ok-1", "ok-2"])
    expect(readFileSync(errors, "utf8").trim().split("\n").map((l) => JSON.parse(l).custom_id)).toEqual(["bad"])
    expect(readFileSync(results, "utf8").trim().split("\n")).toHaveLength(3)
    expect(downloaded.stderr).toContain(`Wrote 2 lines (${Buffer.byteLength(readFileSync(output))} bytes) of output file ${done.output_file_id} to ${output}\n`)

    // The output file alone, to standard output, as `files content` writes it too.
    const piped = await ok(cli, "batch", "download-results", "--batch-id", batchId, "--output-file", "-")
    expect(piped.stdout).toBe(readFileSync(output, "utf8"))
    expect((await ok(cli, "files", "content", done.output_file_id)).stdout).toBe(readFileSync(output, "utf8"))
  })

  it("a batch whose every row completed has no error file: --error-file writes it empty and says so", async () => {
    const { cli, api } = await account()
    const batchId = (await ok(cli, "batch", "submit", "--input-file", file("fine.jsonl", jsonl([chat("only", "fine")])), "--as-file")).stdout.trim()
    await api.waitFinal(batchId)
    const errors = join(dir, "no-errors.jsonl")
    const run = await ok(cli, "batch", "download-results", "--batch-id", batchId, "--error-file", errors)
    expect(readFileSync(errors, "utf8")).toBe("")
    expect(run.stderr).toBe(`${batchId} has no error file (every row completed): wrote an empty ${errors}\n`)
  })

  it("takes the endpoint from the first line's url when --endpoint names none", async () => {
    const { cli, api } = await account()
    const input = file("embed.jsonl", jsonl([embed("e-1", "alpha"), embed("e-2", "beta")]))
    const inferred = (await ok(cli, "batch", "submit", "--input-file", input, "--as-file")).stdout.trim()
    expect((await api.call("GET", `/v1/batches/${inferred}`)).body).toMatchObject({ endpoint: "/v1/embeddings", request_counts: { total: 2 } })

    const bare = file("embed-bare.jsonl", jsonl([{ custom_id: "b-1", method: "POST", url: "/v1/embeddings", body: { model: EMBED, input: "gamma" } }]))
    const named = (await ok(cli, "batch", "submit", "--input-file", bare, "--as-file", "--endpoint", "/v1/embeddings")).stdout.trim()
    expect((await api.call("GET", `/v1/batches/${named}`)).body).toMatchObject({ endpoint: "/v1/embeddings" })
  })

  it("--dry-run estimates the batch from the uploaded file, then deletes the upload", async () => {
    const { cli, api } = await account()
    const run = await ok(cli, "batch", "submit", "--input-file", file("estimate.jsonl", jsonl([chat("a", "one"), chat("b", "two")])), "--as-file", "--dry-run")
    expect(JSON.parse(run.stdout)).toMatchObject({ request_counts: { total: 2 } })
    expect(run.stderr).toMatch(/Would submit 2 rows: \$/)
    expect((await api.call("GET", "/v1/batches")).body.data).toEqual([])
    expect((await api.call("GET", "/v1/files")).body.data).toEqual([])
  })

  it("bad input is one line on stderr, and a file the create refuses is deleted again", async () => {
    const { cli, api } = await account()
    const good = file("good.jsonl", jsonl([chat("a", "one")]))
    await oneLine(cli, ["batch", "submit", "--input-file", good, "--as-file", "--model", CHAT], 2, /--model goes with inline rows, not --as-file/)
    await oneLine(cli, ["batch", "submit", "--input-file", good, "--endpoint", "/v1/embeddings"], 2, /--endpoint goes with --as-file/)
    await oneLine(cli, ["batch", "submit", "--input-file", good, "--as-file", "--endpoint", "/v1/completions"], 2, /--endpoint must be one of \/v1\/chat\/completions, \/v1\/embeddings, \/v1\/responses, got '\/v1\/completions'/)

    const bad = file("bad.jsonl", `${JSON.stringify(chat("fine", "x"))}\n{not json\n`)
    const refused = await cli("batch", "submit", "--input-file", bad, "--as-file")
    expect(refused.code).toBe(1)
    expect(refused.stdout).toBe("")
    const [uploadedLine, errorLine, ...rest] = refused.stderr.split("\n")
    expect(uploadedLine).toMatch(/^Uploaded file-\S+ batch: "bad.jsonl"/)
    expect(errorLine).toMatch(/^error: POST \S+ answered 400: line 2 .*; the upload file-\S+ was deleted$/)
    expect(rest).toEqual([""])
    expect((await api.call("GET", "/v1/files")).body.data).toEqual([])

    const embedForChat = file("embed-for-chat.jsonl", jsonl([embed("e", "x")]))
    await expect(cli("batch", "submit", "--input-file", embedForChat, "--as-file", "--endpoint", "/v1/chat/completions")).resolves.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/\nerror: POST \S+ answered 400: line 1 [^\n]+; the upload file-\S+ was deleted\n$/),
    })
  })
})

describe("sluice batch download-results --output-file / --error-file", () => {
  it("are refused plainly for an inline batch, a batch not yet final, or without any target", async () => {
    const { cli, api } = await account()
    const inline = (await ok(cli, "batch", "submit", "--input-file", file("inline.jsonl", jsonl([chat("a", "one")])))).stdout.trim()
    await api.waitFinal(inline)
    await oneLine(cli, ["batch", "download-results", "--batch-id", inline, "--output-file", join(dir, "x.jsonl")], 1, new RegExp(`${inline} was not created from a file, so it has no output or error file: --out writes its results.jsonl`))
    await oneLine(cli, ["batch", "download-results", "--batch-id", inline], 2, /download-results needs --out FILE, --output-file FILE or --error-file FILE/)
    await oneLine(cli, ["batch", "download-results", "--batch-id", inline, "--out", "-", "--error-file", "-"], 2, /only one of --out, --output-file and --error-file may be -/)

    const slow = file("slow.jsonl", jsonl([chat("slow", `wait ${simDirective.latency(30_000)}`)]))
    const running = (await ok(cli, "batch", "submit", "--input-file", slow, "--as-file")).stdout.trim()
    await oneLine(cli, ["batch", "download-results", "--batch-id", running, "--error-file", join(dir, "e.jsonl")], 1, new RegExp(`${running} is (validating|in_progress): its output and error files are made once it is final \\(sluice batch wait --batch-id ${running}\\)`))
    expect(existsSync(join(dir, "e.jsonl"))).toBe(false)
    await ok(cli, "batch", "cancel", "--batch-id", running)
  })
})

describe("memory", () => {
  it("a 96 MB file goes up with files upload and comes back with files content (to -o and to standard output) streamed: each process's peak RSS grows by less than half of it, where holding it whole would grow it by all of it", async () => {
    const { env } = await account()
    const line = `${JSON.stringify(chat("row", "x".repeat(2_300)))}\n`
    const lines = 40_000
    const size = Buffer.byteLength(line) * lines
    const path = file("large.jsonl", line.repeat(lines))
    /** The CLI's peak RSS in bytes, as GNU time reads it from the kernel once the process has ended, and what it printed. */
    const measured = async (args: ReadonlyArray<string>, stdout: "keep" | "discard" = "keep") => {
      const run = await runToEnd("/bin/sh", ["-c", `exec /usr/bin/time -f 'peak %M' "$@" ${stdout === "discard" ? ">/dev/null" : ""}`, "sh", SLUICE_BIN, ...args], {
        env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...env },
        cwd: dir,
      })
      expect(run.code, run.stderr).toBe(0)
      return { peak: Number(/peak (\d+)/.exec(run.stderr)![1]) * 1024, stdout: run.stdout }
    }
    const uploaded = await measured(["files", "upload", path])
    const id = uploaded.stdout.trim()
    const idle = (await measured(["files", "get", id])).peak
    const out = join(dir, "large-copy.jsonl")
    const toFile = (await measured(["files", "content", id, "-o", out])).peak
    expect(statSync(out).size).toBe(size)
    const toStdout = (await measured(["files", "content", id], "discard")).peak
    for (const peak of [uploaded.peak, toFile, toStdout]) expect(peak - idle).toBeLessThan(size / 2)
  }, 120_000)
})
