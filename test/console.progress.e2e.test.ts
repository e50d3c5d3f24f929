import { mkdirSync } from "node:fs"
import { join } from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { SseDecoder } from "../src/sdk/sseDecoder.js"
import { launchChromium, signedInConsole } from "./support/browser.js"
import { chatRow, client } from "./support/client.js"
import { ADMIN_TOKEN, BOOTSTRAP_KEY, type Sluice, startSluice } from "./support/sluice.js"

/** Screenshots go to the test's output folder (gitignored). */
const shots = join(process.cwd(), "test-results", "console-progress")

const settles = new Set(["row_completed", "row_failed", "row_cancelled"])

/** A final batch's whole history from its events stream, which ends once the batch is done. */
const history = async (url: string, batchId: string) => {
  const response = await fetch(`${url}/v1/batches/${batchId}/events`, { headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` } })
  const decoder = new SseDecoder()
  const events = decoder.push(await response.text()).map((m) => ({ type: m.event, ...(JSON.parse(m.data) as { at: number }) }))
  return events
}

describe("the console's figures and pictures of a batch, in headless Chromium", () => {
  let sim: Simulator
  let sluice: Sluice
  let browser: Browser
  let page: Page
  const pageErrors: Array<string> = []
  const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })
  const api = () => client(sluice.url)

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true })
    sim = await startSimulator({ latencyMs: 40 })
    sluice = await startSluice({ models: [{ id: "glm-5.3-flash", upstream_url: sim.url, batch_concurrency: 2, timeout_ms: 30_000 }] })
    browser = await launchChromium()
    page = await signedInConsole(browser, { baseUrl: sluice.url, apiKey: BOOTSTRAP_KEY, errors: pageErrors, ready: (p) => p.waitForSelector("#sign-out") })
  })
  afterAll(async () => {
    await browser?.close()
    await sluice?.stop()
    sluice?.cleanup()
    await sim?.close()
  })

  it("a final batch's rows/s is its own: rows its attempts settled over the time from its first start to its end, the same on every read", async () => {
    const created = await api().call("POST", "/v1/batches", { requests: Array.from({ length: 30 }, (_, i) => chatRow(`q-${i}`, `question ${i}`)) })
    expect(created.status).toBe(200)
    const batchId = created.body.id as string
    await api().waitFinal(batchId)

    const events = await history(sluice.url, batchId)
    const started = events.find((e) => e.type === "row_started")!.at
    const ended = events.find((e) => e.type === "batch_completed")!.at
    const rows = events.filter((e) => settles.has(e.type)).length
    expect(rows).toBe(30)
    const rate = (rows * 1000) / (ended - started)
    expect((await api().call("GET", `/v1/batches/${batchId}/progress`)).body).toMatchObject({
      started_at_ms: started,
      ended_at_ms: ended,
      rows_settled: rows,
      rows_per_second: Math.round(rate * 1000) / 1000,
    })

    const seen: Array<string | null> = []
    for (const _ of [1, 2]) {
      await page.goto(`${sluice.url}/console/#/batches/${batchId}`)
      await page.reload()
      await expect.poll(() => page.textContent("#rate")).not.toBe("—")
      seen.push(await page.textContent("#rate"))
      // Read again a while later, as a refresh would: a pace over the last seconds would have moved.
      await new Promise((r) => setTimeout(r, 1500))
      seen.push(await page.textContent("#rate"))
    }
    expect(seen).toEqual(Array(4).fill((Math.round(rate * 1000) / 1000).toFixed(1)))
    // Its progress drawn beside the figures: the line climbs to every row its attempts settled.
    expect(await page.getAttribute("#timeline-chart", "data-settled")).toBe(String(rows))
    expect(await page.$$eval("#timeline-chart polygon.settled", (p) => p.length)).toBe(1)
    await shot("final-rate")
    expect(pageErrors).toEqual([])
  })

  it("draws a running batch's rows settled over time, growing, and its tokens beside the cost", async () => {
    const created = await api().call("POST", "/v1/batches", {
      requests: Array.from({ length: 40 }, (_, i) => chatRow(`slow-${i}`, `question ${i} ${simDirective.latency(600)}`)),
    })
    const batchId = created.body.id as string
    await page.goto(`${sluice.url}/console/#/batches/${batchId}`)
    await expect.poll(() => page.textContent("h1")).toBe(batchId)
    const drawn = new Set<string>()
    await expect
      .poll(
        async () => {
          drawn.add((await page.getAttribute("#timeline-chart", "data-settled").catch(() => null)) ?? "")
          return page.textContent("#status")
        },
        { timeout: 60_000, interval: 200 },
      )
      .toBe("completed")
    await expect.poll(() => page.getAttribute("#timeline-chart", "data-settled"), { timeout: 15_000 }).toBe("40")
    expect([...drawn].filter((n) => n !== "" && n !== "0" && n !== "40").length).toBeGreaterThan(0)
    const labels = await page.$$eval(".facts > div", (divs) => divs.map((d) => d.firstChild?.textContent))
    expect(labels.indexOf("Tokens")).toBe(labels.indexOf("Cost") + 1)
    await shot("batch-timeline")
  })

  it("draws each model's rows started per second and slots in use over the last hour for the admin, from samples that add up to the rows it started", async () => {
    const startedAtInstance = async () => {
      const text = (await api().call("GET", "/metrics")).text
      return [...text.matchAll(/^sluice_rows_started_total\{[^}]*model="glm-5.3-flash"[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0)
    }
    const started = await startedAtInstance()
    // The two batches' 70 rows, and any retry.
    expect(started).toBeGreaterThanOrEqual(70)
    const sampled = async () => {
      const history = (await api().admin("GET", "/admin/v1/models/history")).body
      const model = history.data.find((d: { model: string }) => d.model === "glm-5.3-flash")
      return (model?.samples ?? []).reduce((sum: number, s: { starts: number }) => sum + s.starts, 0)
    }
    // A sample closes every 10 s: the one after the batches ended holds their last starts.
    await expect.poll(sampled, { timeout: 30_000, interval: 1000 }).toBe(started)
    const history = (await api().admin("GET", "/admin/v1/models/history")).body
    expect(history.sample_ms).toBe(10_000)
    const samples = history.data.find((d: { model: string }) => d.model === "glm-5.3-flash").samples
    expect(samples.some((s: { slots_in_use: number }) => s.slots_in_use > 0)).toBe(true)
    expect(samples.every((s: { slots_limit: number }) => s.slots_limit === 2)).toBe(true)

    await page.goto(`${sluice.url}/console/#/admin`)
    await page.fill("input[name=adminToken]", ADMIN_TOKEN)
    await page.click("button[type=submit]")
    await page.waitForSelector('svg[id="starts-glm-5.3-flash"]')
    expect(await page.getAttribute('svg[id="starts-glm-5.3-flash"]', "data-starts")).toBe(String(started))
    expect(await page.$$eval('svg[id="slots-glm-5.3-flash"] polyline.limit', (p) => p.length)).toBe(1)
    await shot("admin-last-hour")
    expect(pageErrors).toEqual([])
  })
})
