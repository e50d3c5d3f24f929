import { mkdirSync } from "node:fs"
import { join } from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { launchChromium, signedInConsole } from "./support/browser.js"
import { chatRow, client } from "./support/client.js"
import { BOOTSTRAP_KEY, type Sluice, startSluice } from "./support/sluice.js"
import { waitFor } from "./support/waitFor.js"

/** Screenshots go to the test's output folder (gitignored). */
const shots = join(process.cwd(), "test-results", "console-waiting-on")
const MODEL = "glm-5.3-flash"

describe("the console says why a batch or a background response waits, in headless Chromium", () => {
  let sim: Simulator
  let sluice: Sluice
  let browser: Browser
  let page: Page
  const pageErrors: Array<string> = []
  const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })
  const api = () => client(sluice.url)

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true })
    sim = await startSimulator({ models: [MODEL] })
    sluice = await startSluice({
      models: [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 1, timeout_ms: 120_000 }],
      // Short lease rounds: the model's state is published with each (every second). Not 1 s: a call is sent only
      // while the lease is valid (0.8 of the TTL from its last renewal), and on a loaded machine a renewal late by
      // half a second left the long row's call unsent and retried, so the next batch ran in its slot.
      env: { SLUICE_LEASE_TTL_MS: "3000" },
    })
    browser = await launchChromium()
    page = await signedInConsole(browser, { baseUrl: sluice.url, apiKey: BOOTSTRAP_KEY, errors: pageErrors, ready: (p) => p.waitForSelector("#sign-out") })
  })
  afterAll(async () => {
    await browser?.close()
    await sluice?.stop("SIGKILL")
    sluice?.cleanup()
    await sim?.close()
  })

  it("a batch behind another's long row shows model_capacity on its page and in the list, and nothing once it has run; a background response behind it shows it too", async ({ onTestFailed }) => {
    // Long enough for the three pages below on a loaded machine (CI at 1,087 s once took over 12 s
    // to reach the list, and found the batch already run): the batch waits until it ends.
    const hold = await api().call("POST", "/v1/batches", { requests: [chatRow("hold", `hold ${simDirective.latency(30_000)}`, MODEL)] })
    // The premise is that the long row holds the model's one slot throughout: if it does not, say how it ended.
    onTestFailed(async () => {
      const held = await api().call("GET", `/v1/batches/${hold.body.id}`)
      console.error(`the long row's batch: ${held.text}\nits row: ${JSON.stringify(await api().allResults(hold.body.id))}\nSluice's output:\n${sluice.output()}`)
    })
    await waitFor("the long row to run", async () => (await api().allResults(hold.body.id))[0]?.status === "running")
    const created = await api().call("POST", "/v1/batches", { requests: [chatRow("next", "next", MODEL)] })
    const id = created.body.id as string
    const response = await api().call("POST", "/v1/responses", { model: MODEL, input: "in the background", background: true })
    expect(response.status, response.text).toBe(200)
    await waitFor("the batch to wait on the model", async () => (await api().call("GET", `/v1/batches/${id}`)).body.waiting_on?.reason === "model_capacity")
    const waiting = (await api().call("GET", `/v1/batches/${id}`)).body.waiting_on

    await page.goto(`${sluice.url}/console/#/batches/${id}`)
    await expect.poll(() => page.getAttribute("#waiting-on", "data-reason")).toBe("model_capacity")
    expect(await page.getAttribute("#waiting-on", "title")).toBe(waiting.detail)
    expect(await page.textContent("#waiting-detail")).toBe(`Waiting: ${waiting.detail}.`)
    await shot("batch-waiting")

    await page.goto(`${sluice.url}/console/#/batches`)
    await expect.poll(() => page.textContent(`tr:has(a[href="#/batches/${id}"]) .waiting`)).toBe("waiting on model_capacity")
    await shot("list-waiting")

    await page.goto(`${sluice.url}/console/#/responses/${response.body.id}`)
    await expect.poll(() => page.getAttribute("#waiting-on", "data-reason")).toBe("model_capacity")
    await shot("response-waiting")

    // The page reads the batch again while it waits: once it has run, it waits on nothing.
    await page.goto(`${sluice.url}/console/#/batches/${id}`)
    await expect.poll(() => page.textContent("#status"), { timeout: 60_000, interval: 250 }).toBe("completed")
    await expect.poll(() => page.textContent("#waiting-on")).toBe("nothing")
    expect(pageErrors).toEqual([])
  })
})
