import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runToEnd } from "../support/processRun.js"
import { BOOTSTRAP_KEY, type Sluice, startSluice } from "../support/sluice.js"

const root = fileURLToPath(new URL("../..", import.meta.url))
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")

/** npm as a process of its own, awaited: a minute of install must not block the test worker's event loop. */
const npm = async (args: ReadonlyArray<string>, cwd: string): Promise<string> => {
  const run = await runToEnd("npm", args, { cwd, env: { ...process.env, npm_config_update_notifier: "false" } })
  if (run.code !== 0) throw new Error(`npm ${args.join(" ")} exited ${run.code}:\n${run.stderr}`)
  return run.stdout
}

/** A dependent's script, as a user writes it: the package's name, nothing of this repository. */
const script = `
import { SluiceApiError, SluiceClient } from "sluice/sdk"

const client = new SluiceClient({ apiKey: process.env.SLUICE_API_KEY, baseUrl: process.env.SLUICE_BASE_URL })
const batch = await client.submitBatch({ requests: [{ custom_id: "a", content: "Name a colour." }], model: "glm-5.3-flash" })
const done = await client.waitForCompletion(batch.id, { pollInterval: 100, timeout: 30_000 })
console.log(done.status, done.request_counts.completed)
for await (const line of client.results(done.id)) console.log(line.custom_id, line.status)
const row = { custom_id: "f", method: "POST", url: "/v1/chat/completions", body: { model: "glm-5.3-flash", messages: [{ role: "user", content: "Name a colour." }] } }
const file = await client.uploadFile({ file: new TextEncoder().encode(JSON.stringify(row) + "\\n"), filename: "in.jsonl" })
const fromFile = await client.createBatch({ input_file_id: file.id, endpoint: "/v1/chat/completions" })
const fileDone = await client.waitForCompletion(fromFile.id, { pollInterval: 100, timeout: 30_000 })
for await (const line of client.outputLines(fileDone.output_file_id ?? "")) console.log(line.custom_id, line.response?.status_code)
try {
  await client.getBatch("batch_missing")
} catch (error) {
  console.log(error instanceof SluiceApiError ? error.status : "not an api error")
}
`

describe("sluice/sdk installed from the tarball npm pack makes, into a project of its own", () => {
  let sluice: Sluice
  let dir: string
  let app: string
  const env = () => ({ PATH: process.env["PATH"] ?? "", HOME: dir, SLUICE_API_KEY: BOOTSTRAP_KEY, SLUICE_BASE_URL: `${sluice.url}/v1` })

  beforeAll(async () => {
    sluice = await startSluice()
    dir = mkdtempSync(join(tmpdir(), "sluice-pack-"))
    // The test run's global setup has just built dist/ from these sources, which is what `prepare` would do.
    const tarball = (await npm(["pack", "--ignore-scripts", "--silent", "--pack-destination", dir], root)).trim().split("\n").pop()!
    app = join(dir, "app")
    mkdirSync(app)
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "scratch", private: true, type: "module" }))
    // Dependencies come from npm's cache or its registry, as for any install. Install scripts are skipped:
    // better-sqlite3 would fetch or compile its addon, which the server needs and the SDK does not.
    await npm(["install", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund", join(dir, tarball)], app)
    // A TypeScript project for Node has Node's types, as this repository does.
    const nodeTypes = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).devDependencies["@types/node"]
    await npm(["install", "--prefer-offline", "--no-audit", "--no-fund", "--save-dev", `@types/node@${nodeTypes}`], app)
  }, 240_000)
  afterAll(async () => {
    await sluice?.stop()
    sluice?.cleanup()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it("ships the SDK as JavaScript with .d.ts files, built from src/sdk and the domain's Schemas alone", () => {
    const lib = join(app, "node_modules", "sluice", "dist", "lib")
    expect(readdirSync(lib).filter((f) => !f.startsWith(".")).sort()).toEqual(["domain", "sdk"])
    const sdk = readdirSync(join(lib, "sdk"))
    expect(sdk).toContain("index.js")
    expect(sdk).toContain("index.d.ts")
    expect(sdk.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toEqual([])
    const exported = JSON.parse(readFileSync(join(app, "node_modules", "sluice", "package.json"), "utf8")).exports["./sdk"]
    expect(exported).toEqual({ types: "./dist/lib/sdk/index.d.ts", default: "./dist/lib/sdk/index.js" })
  })

  it("runs from plain node, with no loader: submits, waits, reads the results, makes a batch from an uploaded file and reads its output file, and throws typed errors", () => {
    writeFileSync(join(app, "use.mjs"), script)
    const output = execFileSync(process.execPath, ["use.mjs"], { cwd: app, env: env(), encoding: "utf8" })
    expect(output.trim().split("\n")).toEqual(["completed 1", "a completed", "f 200", "404"])
  })

  it("type-checks and compiles from TypeScript with tsc alone, and the types catch a wrong call", async () => {
    const ts = join(app, "ts")
    mkdirSync(ts, { recursive: true })
    // skipLibCheck off: the package's own .d.ts files are checked too (and Effect's with them, which takes a while).
    const options = { module: "nodenext", target: "es2022", strict: true, outDir: "out", skipLibCheck: false }
    writeFileSync(join(ts, "tsconfig.json"), JSON.stringify({ compilerOptions: options, files: ["use.mts"] }))
    writeFileSync(join(ts, "use.mts"), script)
    const compiled = await runToEnd(process.execPath, [tsc, "-p", "."], { cwd: ts })
    expect(compiled.stdout + compiled.stderr).toBe("")
    expect(compiled.code).toBe(0)
    const output = execFileSync(process.execPath, [join("ts", "out", "use.mjs")], { cwd: app, env: env(), encoding: "utf8" })
    expect(output.trim().split("\n")).toEqual(["completed 1", "a completed", "f 200", "404"])

    writeFileSync(join(ts, "wrong.mts"), `import { SluiceClient } from "sluice/sdk"\nnew SluiceClient({ apiKey: "k" }).getBatch(42)\n`)
    const wrongOptions = { ...options, skipLibCheck: true, noEmit: true }
    writeFileSync(join(ts, "tsconfig.wrong.json"), JSON.stringify({ compilerOptions: wrongOptions, files: ["wrong.mts"] }))
    const wrong = await runToEnd(process.execPath, [tsc, "-p", "tsconfig.wrong.json"], { cwd: ts })
    expect(wrong.code).not.toBe(0)
    expect(wrong.stdout).toContain("Argument of type 'number' is not assignable to parameter of type 'string'")
  }, 300_000)
})
