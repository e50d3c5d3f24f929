import { mkdirSync } from "node:fs"
import { join } from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { launchChromium } from "./support/browser.js"
import { chatRow, client } from "./support/client.js"
import { ADMIN_TOKEN, BOOTSTRAP_KEY, type Sluice, startSluice } from "./support/sluice.js"

/** Screenshots go to the test's output folder (gitignored), one per page the test visits. */
const shots = join(process.cwd(), "test-results", "console")

describe("the web console in headless Chromium", () => {
  let sim: Simulator
  let sluice: Sluice
  let browser: Browser
  let page: Page
  const pageErrors: Array<string> = []
  const shot = (name: string, fullPage = true) => page.screenshot({ path: join(shots, `${name}.png`), fullPage })
  const api = () => client(sluice.url)

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true })
    sim = await startSimulator({ latencyMs: 60 })
    sluice = await startSluice({
      models: [
        { id: "glm-5.3-flash", upstream_url: sim.url, batch_concurrency: 2, timeout_ms: 30_000 },
        { id: "slow", upstream_url: sim.url, upstream_model: "glm-5.3-flash", batch_concurrency: 1, timeout_ms: 3_000 },
      ],
    })
    browser = await launchChromium()
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.on("pageerror", (error) => pageErrors.push(`${page.url()}: ${error.message}`))
    page.on("dialog", (dialog) => void dialog.accept())
  })
  afterAll(async () => {
    await browser?.close()
    await sluice?.stop()
    sluice?.cleanup()
    await sim?.close()
  })

  it("a wrong key is told plainly on the sign-in page", async () => {
    await page.goto(`${sluice.url}/console/`)
    await page.fill("input[name=apiKey]", "sk-not-a-key")
    await page.click("button[type=submit]")
    await expect.poll(() => page.textContent("[role=alert]")).toMatch(/not accepted/)
    await shot("sign-in-wrong-key")
  })

  it("signs in, lists the batches newest first, and follows one live to completed", async () => {
    const older = await api().call("POST", "/v1/batches", { requests: [chatRow("only", "hello")] })
    const rows = Array.from({ length: 40 }, (_, i) =>
      chatRow(`q-${i}`, i % 10 === 3 ? `refused ${i} ${simDirective.status(400)}` : `question ${i}`),
    )
    const live = await api().call("POST", "/v1/batches", { requests: rows })
    expect(live.status).toBe(200)

    await page.fill("input[name=apiKey]", BOOTSTRAP_KEY)
    await page.click("button[type=submit]")
    await page.waitForSelector("#batches")
    const listed = await page.$$eval("#batches tbody tr", (trs) => trs.map((tr) => tr.getAttribute("data-batch")))
    expect(listed.indexOf(live.body.id)).toBeLessThan(listed.indexOf(older.body.id))
    await shot("batches")

    await page.click(`tr[data-batch="${live.body.id}"]`)
    await page.waitForSelector("#settled")
    // The count moves while the rows run: it is read several times on its way to 40.
    const seen = new Set<string>()
    await expect
      .poll(
        async () => {
          seen.add((await page.textContent("#settled")) ?? "")
          return page.textContent("#status")
        },
        { timeout: 30_000, interval: 50 },
      )
      .toBe("completed")
    expect(await page.textContent("#settled")).toBe("40 / 40")
    expect([...seen].filter((s) => s !== "40 / 40" && s !== "0 / 40").length).toBeGreaterThan(0)
    // The batch's tokens as the API counts them; the simulator reports no cached or reasoning tokens.
    const { usage } = (await api().call("GET", `/v1/batches/${live.body.id}`)).body
    const count = (n: number) => n.toLocaleString("en-US")
    expect(usage.total_tokens).toBeGreaterThan(0)
    await expect
      .poll(() => page.textContent("#tokens"))
      .toBe(`${count(usage.total_tokens)} (${count(usage.input_tokens)} in; ${count(usage.output_tokens)} out)`)
    await shot("batch-completed")

    await page.selectOption("#filter-status", "failed")
    await expect.poll(() => page.$$eval("#results-table tbody tr", (trs) => trs.length)).toBe(4)
    const statuses = await page.$$eval("#results-table tbody tr td:nth-child(3)", (tds) => tds.map((td) => td.textContent))
    expect(new Set(statuses)).toEqual(new Set(["failed"]))
    await page.fill("#filter-code", "invalid_request")
    await page.press("#filter-code", "Enter")
    await expect.poll(() => page.$$eval("#results-table tbody tr", (trs) => trs.length)).toBe(4)
    await page.click('tr[data-result="batch_req_4"]')
    await page.waitForSelector("#detail-request")
    expect(await page.textContent("#detail-request")).toContain("refused 3")
    expect(await page.textContent("#detail-response")).toContain("invalid_request")
    await shot("result-opened")

    await page.goto(`${sluice.url}/console/#/batches`)
    await page.waitForSelector(`tr[data-batch="${live.body.id}"]`)
    expect(await page.textContent(`tr[data-batch="${live.body.id}"] td.tokens`)).toBe(count(usage.total_tokens))
  })

  it("cancels a running batch, then deletes it", async () => {
    const doomed = await api().call("POST", "/v1/batches", {
      requests: [chatRow("stuck", `stuck ${simDirective.hang}`, "slow"), chatRow("next", "never runs", "slow")],
      priority: "background",
    })
    await page.goto(`${sluice.url}/console/#/batches/${doomed.body.id}`)
    await page.waitForSelector("#cancel:not([disabled])")
    expect(await page.textContent("#priority")).toBe("background")
    await page.click("#cancel")
    await expect.poll(() => page.textContent("#status"), { timeout: 30_000 }).toMatch(/^cancell(ing|ed)$/)
    await expect.poll(() => page.textContent("#status"), { timeout: 30_000 }).toBe("cancelled")
    expect((await api().call("GET", `/v1/batches/${doomed.body.id}`)).body.status).toBe("cancelled")
    await shot("batch-cancelled")

    // Deleting it (the page asks first; the test accepts) leads back to the list, without it.
    await page.click("#delete")
    await page.waitForSelector("#batches")
    expect(await page.$(`tr[data-batch="${doomed.body.id}"]`)).toBeNull()
    expect((await api().call("GET", `/v1/batches/${doomed.body.id}`)).status).toBe(404)
  })

  it("the API reference at /docs renders in the browser from Sluice alone", async () => {
    const requested: Array<string> = []
    page.on("request", (request) => requested.push(request.url()))
    await page.goto(`${sluice.url}/docs`)
    await page.getByText("Create", { exact: false }).first().waitFor({ timeout: 20_000 })
    await expect.poll(() => page.textContent("body")).toContain("/v1/batches")
    await shot("docs", false)
    page.removeAllListeners("request")
    expect(requested.filter((url) => !url.startsWith(sluice.url) && !url.startsWith("data:"))).toEqual([])
  })

  it("shows every model's slots, queue and lease owner to the admin", async () => {
    await page.goto(`${sluice.url}/console/#/admin`)
    await page.fill("input[name=adminToken]", ADMIN_TOKEN)
    await page.click("button[type=submit]")
    await page.waitForSelector('#models tr[data-model="glm-5.3-flash"]')
    expect(await page.textContent('#models tr[data-model="glm-5.3-flash"] .slots')).toMatch(/^\d+ \/ 2$/)
    expect(await page.textContent('#models tr[data-model="slow"] .slots')).toBe("0 / 1")
    // Live: a row that hangs takes the slow model's one slot and the next row waits, with no reload.
    const busy = await api().call("POST", "/v1/batches", {
      requests: [chatRow("held", `held ${simDirective.hang}`, "slow"), chatRow("waits", "waits", "slow")],
    })
    await expect.poll(() => page.textContent('#models tr[data-model="slow"] .slots'), { timeout: 10_000 }).toBe("1 / 1")
    await expect.poll(() => page.textContent('#models tr[data-model="slow"] .queued')).toBe("1")
    await shot("admin-models")
    await api().call("POST", `/v1/batches/${busy.body.id}/cancel`)
    expect(pageErrors).toEqual([])
  })
})
