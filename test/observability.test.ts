import { readFileSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { chatRow, client } from "./support/client.js"
import { type InProcessSluice, startInProcessSluice } from "./support/inProcessSluice.js"
import { scrape } from "./support/prometheus.js"

const dashboard = JSON.parse(
  readFileSync(new URL("../deploy/observability/grafana/dashboards/sluice.json", import.meta.url), "utf8"),
) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> }

/** The metric names a PromQL expression reads (functions and label names are not followed by `{`, `[` or a space-free name). */
const seriesOf = (expr: string): Array<string> => {
  const withoutLabels = expr.replace(/\{[^}]*\}/g, "").replace(/\bby\s*\([^)]*\)/g, "")
  return [...withoutLabels.matchAll(/\b((?:sluice|process|nodejs)_[a-z0-9_]+)\b/g)].map((m) => m[1]!)
}
const familyOf = (series: string) => series.replace(/_(bucket|count|sum)$/, "")

describe("the Grafana dashboard", () => {
  let sim: Simulator
  let sluice: InProcessSluice
  beforeAll(async () => {
    sim = await startSimulator()
    sluice = await startInProcessSluice({ models: [{ id: "glm-5.3-flash", upstream_url: sim.url }] })
  })
  afterAll(async () => {
    await sluice?.stop()
    await sim?.close()
  })

  it("queries only series that /metrics exposes", async () => {
    const api = client(sluice.url)
    const created = await api.call("POST", "/v1/batches", { requests: [chatRow("a", "one")] })
    await api.waitFinal(created.body.id)
    const exposed = await scrape(sluice.url)
    const queried = new Set(dashboard.panels.flatMap((p) => p.targets.flatMap((t) => seriesOf(t.expr))))
    expect(queried.size).toBeGreaterThan(15)
    const missing = [...queried].filter((series) => {
      const family = familyOf(series)
      if (!exposed.families.has(series) && !exposed.families.has(family)) return true
      // A _bucket, _count or _sum series belongs to a histogram.
      return series !== family && !exposed.text.includes(`# TYPE ${family} histogram`)
    })
    expect(missing).toEqual([])
  })

  it("has the panels the operators asked for", () => {
    const titles = dashboard.panels.map((p) => p.title)
    for (const wanted of ["Queue depth", "Batch slots in use vs limit", "Throughput", "Upstream latency", "Retries", "Projection lag"]) {
      expect(titles.some((t) => t.startsWith(wanted))).toBe(true)
    }
  })
})
