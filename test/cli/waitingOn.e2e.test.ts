import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { chatRow } from "../support/client.js"
import { runCli } from "../support/cli.js"
import { ADMIN_TOKEN, BOOTSTRAP_KEY } from "../support/sluice.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"

/**
 * `sluice batch get` shows a batch's waiting_on, and `sluice batch wait` says each time it changes: a
 * batch behind another's long row on a one-slot model waits on model_capacity, then on nothing.
 */
const MODEL = "glm-5.3-flash"

describe("the CLI shows waiting_on", () => {
  const f = withSluice({
    simulator: { models: [MODEL] },
    models: (url) => [{ id: MODEL, upstream_url: url, batch_concurrency: 1, timeout_ms: 120_000 }],
    // Short lease rounds: the model's state is published with each (every second). Not 1 s: a call is sent only
    // while the lease is valid (0.8 of the TTL from its last renewal), and on a loaded machine a renewal late by
    // half a second left the long row's call unsent and retried, so the next batch ran in its slot.
    sluice: { env: { SLUICE_LEASE_TTL_MS: "3000" } },
  })
  let dir: string
  let env: Record<string, string>
  const cli = (...args: Array<string>) => runCli(args, env, dir)

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "sluice-cli-waiting-"))
    env = { SLUICE_CONFIG: join(dir, "credentials.json"), SLUICE_BASE_URL: `${f.sluice.url}/v1`, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN, SLUICE_API_KEY: BOOTSTRAP_KEY }
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("batch get prints it in the batch's JSON; batch wait prints model_capacity, then nothing once it runs, and exits 0", async () => {
    const api = f.api()
    const hold = await api.call("POST", "/v1/batches", { requests: [chatRow("hold", `hold ${simDirective.latency(8_000)}`, MODEL)] })
    await waitFor("the long row to run", async () => (await api.allResults(hold.body.id))[0]?.status === "running")
    const created = await api.call("POST", "/v1/batches", { requests: [chatRow("next", "next", MODEL)] })
    const id = created.body.id as string
    await waitFor("the batch to wait on the model", async () => (await api.call("GET", `/v1/batches/${id}`)).body.waiting_on?.reason === "model_capacity")

    const got = await cli("batch", "get", "--batch-id", id)
    expect(got.code, got.stderr).toBe(0)
    expect(JSON.parse(got.stdout).waiting_on).toMatchObject({ reason: "model_capacity", model: MODEL, detail: expect.stringContaining("in use by other work") })

    const waited = await cli("batch", "wait", "--batch-id", id, "--poll-interval", "0.2")
    expect(waited.code, waited.stderr).toBe(0)
    const lines = waited.stderr.split("\n").filter((l) => l.includes(" waiting on "))
    expect(lines[0]).toMatch(new RegExp(`^${id} waiting on model_capacity since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z: All 1 batch slot\\(s\\) of ${MODEL} are in use by other work$`))
    expect(lines.at(-1)).toBe(`${id} waiting on nothing`)
    expect(waited.stdout).toContain(`${id} completed`)
  })
})
