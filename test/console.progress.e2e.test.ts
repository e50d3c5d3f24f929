import { mkdirSync } from "node:fs"
import { join } from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { SseDecoder } from "../src/sdk/sseDecoder.js"
import { launchChromium } from "./support/browser.js"
import { chatRow, client } from "./support/client.js"
import { BOOTSTRAP_KEY, type Sluice, startSluice } from "./support/sluice.js"

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
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.on("pageerror", (error) => pageErrors.push(`${page.url()}: ${error.message}`))
    await page.goto(`${sluice.url}/console/`)
    await page.fill("input[name=apiKey]", BOOTSTRAP_KEY)
    await page.click("button[type=submit]")
    await page.waitForSelector("#sign-out")
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
    await shot("final-rate")
    expect(pageErrors).toEqual([])
  })
})
