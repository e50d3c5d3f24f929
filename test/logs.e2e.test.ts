import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chatRow, client } from "./support/client.js"
import { type Sluice, startSluice } from "./support/sluice.js"
import { waitFor } from "./support/waitFor.js"

type Line = Record<string, any>

const jsonLines = (output: string): Array<Line> =>
  output
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Line)

/** `SLUICE_LOG_FORMAT=json`: every line the service writes is one JSON object. */
describe("the service's logs", () => {
  let sluice: Sluice
  let quiet: Sluice

  beforeAll(async () => {
    ;[sluice, quiet] = await Promise.all([
      startSluice({ env: { SLUICE_LOG_FORMAT: "json", SLUICE_INSTANCE_ID: "logs-1" } }),
      startSluice({ env: { SLUICE_LOG_FORMAT: "json", SLUICE_LOG_LEVEL: "Warning" } }),
    ])
  })
  afterAll(async () => {
    await Promise.all([sluice?.stop(), quiet?.stop()])
    sluice?.cleanup()
    quiet?.cleanup()
  })

  it("says once where it listens, when it is ready", async () => {
    await waitFor("the listening line", () => sluice.output().includes("listening on"))
    const listening = jsonLines(sluice.output()).filter((l) => String(l.message).startsWith("listening on"))
    expect(listening).toHaveLength(1)
    expect(listening[0]).toMatchObject({ message: `listening on ${sluice.url}`, logLevel: "INFO", annotations: { instance: "logs-1" } })
  })

  it("writes one line per request, by route, and one per batch lifecycle event with the batch, its models and account", async () => {
    const api = client(sluice.url)
    const created = await api.call("POST", "/v1/batches", {
      requests: [chatRow("a", "one"), chatRow("b", "two", "qwen3.6-35b")],
    })
    expect(created.status).toBe(200)
    const batchId = created.body.id as string
    await api.waitFinal(batchId)
    await api.call("GET", `/v1/batches/${batchId}`)
    await waitFor("the completed line", () => sluice.output().includes(`batch ${batchId} completed`))
    const lines = jsonLines(sluice.output())
    const lifecycle = lines.filter((l) => l.annotations?.batch_id === batchId && l.annotations?.event !== undefined)
    expect(lifecycle.map((l) => l.annotations.event)).toEqual(["batch_created", "batch_started", "batch_completed"])
    for (const line of lifecycle) {
      expect(line.annotations).toMatchObject({ account: "bootstrap", models: "glm-5.3-flash,qwen3.6-35b" })
    }
    const requests = lines.filter((l) => l.annotations?.route !== undefined)
    const create = requests.filter((l) => l.annotations.method === "POST" && l.annotations.route === "/v1/batches")
    expect(create).toHaveLength(1)
    expect(create[0]!.annotations).toMatchObject({ status: 200, account: "bootstrap" })
    const reads = requests.filter((l) => l.annotations.route === "/v1/batches/:batch_id")
    expect(reads.length).toBeGreaterThan(0)
    expect(reads.every((l) => l.annotations.batch_id === batchId)).toBe(true)
  })

  it("SLUICE_LOG_LEVEL=Warning leaves out the info lines", async () => {
    const api = client(quiet.url)
    expect((await api.call("GET", "/v1/batches")).status).toBe(200)
    expect((await fetch(`${quiet.url}/healthz`)).status).toBe(200)
    const lines = jsonLines(quiet.output())
    expect(lines.filter((l) => l.logLevel === "INFO")).toEqual([])
  })
})
