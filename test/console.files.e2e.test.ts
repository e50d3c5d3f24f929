import { mkdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { launchChromium, signedInConsole } from "./support/browser.js"
import { chatRow, client } from "./support/client.js"
import { BOOTSTRAP_KEY, type Sluice, startSluice } from "./support/sluice.js"

/** Screenshots go to the test's output folder (gitignored), one per page the test visits. */
const shots = join(process.cwd(), "test-results", "console")
const MODEL = "glm-5.3-flash"
const jsonl = (lines: ReadonlyArray<unknown>) => `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`

describe("the console's page of a batch created from a file, in headless Chromium", () => {
  let sim: Simulator
  let sluice: Sluice
  let browser: Browser
  let page: Page
  const pageErrors: Array<string> = []
  const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })
  const api = () => client(sluice.url)

  const upload = async (name: string, text: string): Promise<string> => {
    const form = new FormData()
    form.set("purpose", "batch")
    form.set("file", new Blob([text]), name)
    const response = await fetch(`${sluice.url}/v1/files`, { method: "POST", headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` }, body: form })
    expect(response.status).toBe(200)
    return ((await response.json()) as { id: string }).id
  }
  const createFromFile = async (fileId: string) => {
    const created = await api().call("POST", "/v1/batches", { input_file_id: fileId, endpoint: "/v1/chat/completions", completion_window: "24h" })
    expect(created.status, created.text).toBe(200)
    return created.body.id as string
  }
  /** Opens the batch's page, once its own heading is drawn (the page before it is replaced, not reloaded). */
  const open = async (batchId: string) => {
    await page.goto(`${sluice.url}/console/#/batches/${batchId}`)
    await expect.poll(() => page.textContent("h1")).toBe(batchId)
  }
  /** Clicks the link and answers the download's name and content. */
  const download = async (selector: string) => {
    const [file] = await Promise.all([page.waitForEvent("download"), page.click(selector)])
    return { name: file.suggestedFilename(), text: readFileSync((await file.path())!, "utf8") }
  }

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true })
    sim = await startSimulator()
    sluice = await startSluice({ models: [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 2, timeout_ms: 30_000 }] })
    browser = await launchChromium()
    page = await signedInConsole(browser, { baseUrl: sluice.url, apiKey: BOOTSTRAP_KEY, errors: pageErrors, ready: (p) => p.waitForSelector("#batches, .muted"), acceptDownloads: true })
  })
  afterAll(async () => {
    await browser?.close()
    await sluice?.stop("SIGKILL")
    sluice?.cleanup()
    await sim?.close()
  })

  it("shows the endpoint, and links that download the input, output and error files as the API serves them", async () => {
    const input = jsonl([chatRow("ok-1", "first"), chatRow("bad", `refused ${simDirective.status(400)}`), chatRow("ok-2", "second")])
    const fileId = await upload("questions.jsonl", input)
    const batchId = await createFromFile(fileId)
    const done = await api().waitFinal(batchId)
    expect(done.request_counts).toEqual({ total: 3, completed: 2, failed: 1 })

    await open(batchId)
    await page.waitForSelector("#download-error")
    expect(await page.textContent("#endpoint")).toBe("/v1/chat/completions")
    expect(await page.textContent("#download-input")).toBe("questions.jsonl")
    expect(await page.textContent("#download-output")).toBe(`${batchId}_output.jsonl`)
    await shot("batch-files")

    expect(await download("#download-input")).toEqual({ name: "questions.jsonl", text: input })
    const output = await download("#download-output")
    expect(output).toEqual({ name: `${batchId}_output.jsonl`, text: (await api().call("GET", `/v1/files/${done.output_file_id}/content`)).text })
    expect(output.text.trim().split("\n").map((l) => JSON.parse(l).custom_id)).toEqual(["ok-1", "ok-2"])
    const errors = await download("#download-error")
    expect(errors).toEqual({ name: `${batchId}_error.jsonl`, text: (await api().call("GET", `/v1/files/${done.error_file_id}/content`)).text })
    expect(errors.text.trim().split("\n").map((l) => JSON.parse(l).custom_id)).toEqual(["bad"])

    // The input deleted since: the page says so where its link was, and the outputs still download.
    expect((await api().call("DELETE", `/v1/files/${fileId}`)).status).toBe(200)
    await page.reload()
    await page.waitForSelector("#download-output")
    expect(await page.textContent("#file-input")).toMatch(new RegExp(`^${fileId}: File '${fileId}' was deleted at`))
    expect(await page.$("#download-input")).toBeNull()
    expect(pageErrors).toEqual([])
  })

  it("a running file-based batch says its outputs come once it is final, and links them live when it is", async () => {
    const fileId = await upload("slow.jsonl", jsonl([chatRow("slow", `take your time ${simDirective.latency(2_500)}`)]))
    const batchId = await createFromFile(fileId)
    await open(batchId)
    await page.waitForSelector("#download-input")
    expect(await page.textContent("#file-output")).toBe("once the batch is final")
    expect(await page.textContent("#file-error")).toBe("once the batch is final")
    await shot("batch-files-running")

    await page.waitForSelector("#download-output", { timeout: 30_000 })
    expect(await page.textContent("#status")).toBe("completed")
    expect(await page.textContent("#file-error")).toBe("none: every row completed")
    expect(pageErrors).toEqual([])
  })

  it("an inline batch shows its endpoint and no files", async () => {
    const created = await api().call("POST", "/v1/batches", { requests: [chatRow("only", "hello")] })
    await api().waitFinal(created.body.id)
    await open(created.body.id)
    expect(await page.textContent("#endpoint")).toBe("/v1/chat/completions")
    expect(await page.$$("#files > *")).toEqual([])
    expect(await page.isVisible("#files")).toBe(false)
    expect(pageErrors).toEqual([])
  })
})
