/**
 * A quick measurement, not the benchmark suite (issue 5): starts the simulator (0 ms latency) and
 * Sluice as separate processes, optionally its own nats-server, submits one batch of N rows and
 * prints the create latency and rows/s until the batch completes.
 *
 *   node --import tsx bench/throughput.ts [rows=20000] [embedded|nats] [slots=64]
 */
import { spawn } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startSimulator } from "../src/sim/Simulator.js"
import { startNatsServer } from "../test/support/natsServer.js"
import { freePort } from "../test/support/sluice.js"

const rows = Number(process.argv[2] ?? 20_000)
const backend = process.argv[3] ?? "embedded"
const slots = Number(process.argv[4] ?? 64)
const key = "bench-key"

const sim = await startSimulator()
const nats = backend === "nats" ? await startNatsServer() : undefined
const dir = mkdtempSync(join(tmpdir(), "sluice-bench-"))
writeFileSync(join(dir, "models.json"), JSON.stringify({ models: [{ id: "glm-5.3-flash", upstream_url: sim.url, batch_concurrency: slots }] }))
const port = await freePort()
const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
  env: { ...process.env, SLUICE_PORT: String(port), SLUICE_DATA_DIR: dir, SLUICE_MODELS: join(dir, "models.json"), SLUICE_BOOTSTRAP_KEY: key, ...(nats ? { NATS_URL: nats.url } : {}) },
  stdio: "ignore",
})
const url = `http://127.0.0.1:${port}`
for (;;) {
  try {
    if ((await fetch(`${url}/openapi.json`)).ok) break
  } catch {}
  await new Promise((r) => setTimeout(r, 100))
}
const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
const body = JSON.stringify({
  requests: Array.from({ length: rows }, (_, i) => ({ custom_id: `r${i}`, body: { model: "glm-5.3-flash", messages: [{ role: "user", content: `question ${i}` }], max_tokens: 8 } })),
})
let t0 = performance.now()
const created = (await (await fetch(`${url}/v1/batches`, { method: "POST", headers, body })).json()) as { id: string }
const createMs = performance.now() - t0
t0 = performance.now()
for (;;) {
  const batch = (await (await fetch(`${url}/v1/batches/${created.id}`, { headers })).json()) as { status: string }
  if (batch.status === "completed") break
  await new Promise((r) => setTimeout(r, 100))
}
const runMs = performance.now() - t0
t0 = performance.now()
const page = await (await fetch(`${url}/v1/batches/${created.id}/results?limit=1000&after=batch_req_${Math.floor(rows / 2)}`, { headers })).text()
const pageMs = performance.now() - t0
console.log(
  JSON.stringify({ backend, rows, slots, bodyMiB: +(body.length / 2 ** 20).toFixed(1), createMs: Math.round(createMs), rowsPerSecond: Math.round(rows / (runMs / 1000)), resultsPage1000Ms: +pageMs.toFixed(1), pageKiB: Math.round(page.length / 1024) }),
)
child.kill("SIGTERM")
await new Promise((r) => child.once("exit", r))
await nats?.stop()
await sim.close()
