import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SLUICE_BIN } from "./support/cli.js"
import { type Sluice, startSluice } from "./support/sluice.js"

const root = fileURLToPath(new URL("..", import.meta.url))
const readme = readFileSync(join(root, "README.md"), "utf8")

/** The fenced block that follows `<!-- readme-test: name -->` in the README, exactly as a reader copies it. */
const readmeBlock = (name: string): string => {
  const marker = `<!-- readme-test: ${name} -->\n`
  const at = readme.indexOf(marker)
  if (at < 0) throw new Error(`README has no block marked ${name}`)
  const fence = /^```[a-z]*\n([\s\S]*?)^```$/m.exec(readme.slice(at + marker.length))
  if (fence?.[1] === undefined) throw new Error(`README's ${name} marker is not followed by a fenced block`)
  return fence[1]
}

describe("the README's examples run as written", () => {
  let sluice: Sluice
  let dir: string
  beforeAll(async () => {
    // The quick start starts the server with SLUICE_BOOTSTRAP_KEY=hyi-demo; the examples use that key.
    sluice = await startSluice({ env: { SLUICE_BOOTSTRAP_KEY: "hyi-demo" } })
    dir = mkdtempSync(join(tmpdir(), "sluice-readme-"))
  })
  afterAll(async () => {
    await sluice?.stop()
    sluice?.cleanup()
    rmSync(dir, { recursive: true, force: true })
  })

  it("the curl quick start creates a batch, keeps its id, waits and lists both results", () => {
    const block = readmeBlock("curl-quickstart")
    expect(block).toContain("http://127.0.0.1:8080/v1/batches")
    // The README's server listens on 8080; this one on a free port. Nothing else in the block changes.
    const script = block.replaceAll("http://127.0.0.1:8080", sluice.url)
    const output = execFileSync("bash", ["-euo", "pipefail", "-c", script], {
      cwd: dir,
      env: { PATH: process.env["PATH"] ?? "", HOME: dir },
      encoding: "utf8",
      timeout: 60_000,
    })
    const [batchId, ...results] = output.trim().split("\n")
    expect(batchId).toMatch(/^batch_[0-9a-zA-Z]+$/)
    expect(results).toEqual([
      expect.stringMatching(/^q-1 completed Simulated answer to: Summarize the plot of Hamlet/),
      expect.stringMatching(/^q-2 completed Simulated answer to: Translate "good morning" into French/),
    ])
  })

  it("the CLI quick start submits, waits and downloads", () => {
    const work = join(dir, "cli")
    const bin = join(dir, "bin")
    mkdirSync(work)
    mkdirSync(bin)
    // What `npm link` does: `sluice` on the PATH is the package's bin.
    symlinkSync(SLUICE_BIN, join(bin, "sluice"))
    execFileSync("bash", ["-euo", "pipefail", "-c", readmeBlock("cli-quickstart")], {
      cwd: work,
      env: {
        PATH: `${bin}:${process.env["PATH"] ?? ""}`,
        HOME: dir,
        SLUICE_CONFIG: join(dir, "credentials.json"),
        // The README's server listens on 8080; this one on a free port.
        SLUICE_BASE_URL: `${sluice.url}/v1`,
      },
      encoding: "utf8",
    })
    const results = readFileSync(join(work, "results.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l))
    expect(results.map((r) => [r.custom_id, r.status])).toEqual([
      ["q-1", "completed"],
      ["q-2", "completed"],
      ["line-3", "completed"],
    ])
    expect(results[2].response.body.choices[0].message.content).toContain("disk full on /var")
  })

  it("the SDK example submits, waits and reads every result", () => {
    // Inside the package, so `sluice/sdk` resolves to it as it would for a dependent.
    const scratch = join(root, ".tmp")
    mkdirSync(scratch, { recursive: true })
    const script = join(scratch, `readme-sdk-${process.pid}.ts`)
    writeFileSync(script, readmeBlock("sdk"))
    try {
      const env: Record<string, string> = { PATH: process.env["PATH"] ?? "", HOME: dir, SLUICE_BASE_URL: `${sluice.url}/v1` }
      const output = execFileSync(process.execPath, ["--import", "tsx", script], { cwd: root, env, encoding: "utf8" })
      const lines = output.trim().split("\n")
      expect(lines[0]).toBe("completed { total: 2, completed: 2, failed: 0 }")
      expect(lines[1]).toMatch(/^q-1 completed Simulated answer to: Summarize the plot of Hamlet/)
      expect(lines[2]).toMatch(/^line-2 completed Simulated answer to: Name three prime numbers/)
    } finally {
      rmSync(script, { force: true })
    }
  })
})
