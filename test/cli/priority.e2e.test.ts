import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli } from "../support/cli.js"
import { ADMIN_TOKEN } from "../support/sluice.js"
import { withSluice } from "../support/withSluice.js"

/** `--priority` on the CLI's creates and `--max-priority` on its admin commands, the real binary against a real server. */

const MODEL = "glm-5.3-flash"
const ACCOUNT = "cli-priority"

describe("the CLI's --priority and --max-priority", () => {
  const f = withSluice({
    inProcess: true,
    simulator: { models: [MODEL], latencyMs: 2 },
    models: (url) => [{ id: MODEL, upstream_url: url, batch_concurrency: 4 }],
  })
  let dir: string
  let env: Record<string, string>
  let rows: string
  const cli = (...args: Array<string>) => runCli(args, env, dir)
  const batch = async (id: string) => (await f.api(env["SLUICE_API_KEY"]).call("GET", `/v1/batches/${id}`)).body

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sluice-cli-priority-"))
    env = { SLUICE_CONFIG: join(dir, "credentials.json"), SLUICE_BASE_URL: `${f.sluice.url}/v1`, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN }
    const created = await cli("admin", "account", "create", "--id", ACCOUNT, "--tier", "internal")
    expect(created.code, created.stderr).toBe(0)
    expect(JSON.parse(created.stdout)).toMatchObject({ id: ACCOUNT, max_priority: "standard" })
    env["SLUICE_API_KEY"] = (await f.api().admin("POST", `/admin/v1/accounts/${ACCOUNT}/keys`, {})).body.key
    rows = join(dir, "rows.jsonl")
    writeFileSync(
      rows,
      [0, 1].map((i) => JSON.stringify({ custom_id: `r-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: MODEL, messages: [{ role: "user", content: `hi ${i}` }] } })).join("\n") + "\n",
    )
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("batch submit --priority: refused above the account's max_priority, taken once an admin raises it with --max-priority", async () => {
    const refused = await cli("batch", "submit", "--input-file", rows, "--priority", "high")
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("answered 403: 'priority' 'high' is above what this account may use: its max_priority is 'standard'")

    const raised = await cli("admin", "account", "update", "--id", ACCOUNT, "--max-priority", "high")
    expect(raised.code, raised.stderr).toBe(0)
    expect(JSON.parse(raised.stdout)).toMatchObject({ id: ACCOUNT, max_priority: "high" })

    const estimate = await cli("batch", "submit", "--input-file", rows, "--priority", "high", "--dry-run")
    expect(estimate.code, estimate.stderr).toBe(0)
    expect(JSON.parse(estimate.stdout).fits.priority).toBe(true)

    const high = await cli("batch", "submit", "--input-file", rows, "--priority", "high")
    expect(high.code, high.stderr).toBe(0)
    const id = high.stdout.trim()
    expect(high.stderr).toContain(`Submitted ${id}: 2 rows, priority high`)
    expect((await batch(id)).priority).toBe("high")

    const fromFile = await cli("batch", "submit", "--input-file", rows, "--as-file", "--priority", "background")
    expect(fromFile.code, fromFile.stderr).toBe(0)
    expect(await batch(fromFile.stdout.trim())).toMatchObject({ priority: "background", input_file_id: expect.stringMatching(/^file-/) })

    const plain = await cli("batch", "submit", "--input-file", rows)
    expect(plain.stderr).toMatch(/Submitted batch_\w+: 2 rows\n/)
    expect((await batch(plain.stdout.trim())).priority).toBe("standard")
  })

  it("an unknown --priority or --max-priority is a usage error naming the option", async () => {
    const submit = await cli("batch", "submit", "--input-file", rows, "--priority", "urgent")
    expect(submit.code).not.toBe(0)
    expect(submit.stderr).toContain("--priority must be one of high, standard, background, got 'urgent'")
    const update = await cli("admin", "account", "update", "--id", ACCOUNT, "--max-priority", "top")
    expect(update.code).not.toBe(0)
    expect(update.stderr).toContain("--max-priority must be one of high, standard, background, got 'top'")
  })

  it("responses create and stream create --priority; a stream's items take its priority", async () => {
    const response = await cli("responses", "create", "--model", MODEL, "--input", "hello", "--background", "--priority", "background", "--json")
    expect(response.code, response.stderr).toBe(0)
    expect(JSON.parse(response.stdout)).toMatchObject({ status: "in_progress", priority: "background" })

    const stream = await cli("stream", "create", "--name", "urgent work", "--priority", "high", "--json")
    expect(stream.code, stream.stderr).toBe(0)
    const created = JSON.parse(stream.stdout)
    expect(created.priority).toBe("high")
    const listed = await cli("stream", "list")
    expect(listed.stdout).toContain(`${created.id} open, window 24h, priority high: "urgent work"`)

    const item = await cli("responses", "create", "--model", MODEL, "--input", "item", "--stream-id", created.id, "--json")
    expect(JSON.parse(item.stdout).priority).toBe("high")
  })
})
