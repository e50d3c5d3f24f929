import { mkdirSync } from "node:fs"
import { join } from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { launchChromium, signedInConsole } from "./support/browser.js"
import { client } from "./support/client.js"
import { json, startScriptedServer } from "./support/scriptedServer.js"
import { BOOTSTRAP_KEY, type Sluice, startSluice } from "./support/sluice.js"
import { waitFor } from "./support/waitFor.js"

/** Screenshots go to the test's output folder (gitignored), one per page the test visits. */
const shots = join(process.cwd(), "test-results", "console")
const count = (n: number) => n.toLocaleString("en-US")
const tokenFacts = (u: any) =>
  `${count(u.total_tokens)} (${count(u.input_tokens)} in` +
  `${u.input_tokens_details.cached_tokens > 0 ? `, ${count(u.input_tokens_details.cached_tokens)} cached` : ""}; ` +
  `${count(u.output_tokens)} out${u.output_tokens_details.reasoning_tokens > 0 ? `, ${count(u.output_tokens_details.reasoning_tokens)} reasoning` : ""})`

/** An upstream that answers every chat completion with reasoning and one call of get_weather, with detailed usage. */
const toolCall = json(200, {
  id: "chatcmpl-tools",
  object: "chat.completion",
  created: 1_800_000_000,
  model: "tools-upstream",
  choices: [
    {
      index: 0,
      message: {
        role: "assistant",
        content: null,
        reasoning_content: "The weather needs a lookup.",
        tool_calls: [{ id: "call_7", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
      },
      finish_reason: "tool_calls",
    },
  ],
  usage: {
    prompt_tokens: 1200,
    completion_tokens: 40,
    total_tokens: 1240,
    prompt_tokens_details: { cached_tokens: 1024 },
    completion_tokens_details: { reasoning_tokens: 12 },
  },
})

describe("the console's streams and queued responses in headless Chromium", () => {
  let sim: Simulator
  let tools: Awaited<ReturnType<typeof startScriptedServer>>
  let sluice: Sluice
  let browser: Browser
  let page: Page
  const pageErrors: Array<string> = []
  const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })
  const api = () => client(sluice.url).call
  const create = async (body: object) => {
    const created = await api()("POST", "/v1/responses", body)
    expect(created.status).toBe(200)
    return created.body
  }
  const settled = async (id: string) => {
    let last: any
    await waitFor(`response ${id} is final`, async () => {
      last = (await api()("GET", `/v1/responses/${id}`)).body
      return last.status !== "in_progress"
    })
    return last
  }
  const column = (table: string, cls: string) => page.$$eval(`#${table} tbody td.${cls}`, (tds) => tds.map((td) => td.textContent))
  const listed = (table: string) => page.$$eval(`#${table} tbody tr`, (trs) => trs.map((tr) => tr.getAttribute("data-response")))
  const cell = (row: string, cls: string) => page.textContent(`${row} td.${cls}`)
  const status = (row: string) => page.textContent(`${row} .status`)

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true })
    sim = await startSimulator({ latencyMs: 60 })
    tools = await startScriptedServer([(res, req) => (req.url.endsWith("/chat/completions") ? toolCall(res, req) : void res.writeHead(404).end())])
    sluice = await startSluice({
      models: [
        { id: "glm-5.3-flash", upstream_url: sim.url, batch_concurrency: 2, timeout_ms: 30_000 },
        // One slot, and a call that hangs keeps it for the whole test: the next item waits, queued.
        { id: "slow", upstream_url: sim.url, upstream_model: "glm-5.3-flash", batch_concurrency: 1, timeout_ms: 3_600_000 },
        { id: "tools", upstream_url: `${tools.url}/v1`, upstream_model: "tools-upstream", batch_concurrency: 1, timeout_ms: 30_000 },
      ],
    })
    browser = await launchChromium()
    page = await signedInConsole(browser, { baseUrl: sluice.url, apiKey: BOOTSTRAP_KEY, errors: pageErrors, ready: (p) => p.waitForFunction('location.hash === "#/batches"') })
  })
  afterAll(async () => {
    await browser?.close()
    await sluice?.stop()
    sluice?.cleanup()
    await sim?.close()
    await tools?.close()
  })

  it("lists background responses newest first with their figures; a response's page shows its text, function calls and usage", async () => {
    const text = await settled((await create({ model: "glm-5.3-flash", input: "What is a sluice?", background: true, metadata: { run: "r1" } })).id)
    const call = await settled(
      (
        await create({
          model: "tools",
          input: "The weather in Paris?",
          background: true,
          tools: [{ type: "function", name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } }],
        })
      ).id,
    )
    expect(text.status).toBe("completed")
    expect(call.status).toBe("completed")

    await page.click('header a[href="#/responses"]')
    await page.waitForSelector(`#responses tr[data-response="${text.id}"]`)
    expect(await listed("responses")).toEqual([call.id, text.id])
    const row = `#responses tr[data-response="${text.id}"]`
    expect(await cell(row, "model")).toBe("glm-5.3-flash")
    expect(await status(row)).toBe("completed")
    expect(await cell(row, "background")).toBe("yes")
    expect(text.usage.total_tokens).toBeGreaterThan(0)
    expect(await cell(row, "tokens")).toBe(count(text.usage.total_tokens))
    expect(await cell(`#responses tr[data-response="${call.id}"]`, "tokens")).toBe("1,240")
    await shot("responses")

    await page.click(row)
    await page.waitForSelector("#output .output-text")
    expect(await page.textContent("#status")).toBe("completed")
    expect(await page.textContent("#output .output-text")).toBe(text.output[0].content[0].text)
    expect(await page.textContent("#output .output-text")).toMatch(/^Simulated answer to: /)
    expect(await page.textContent("#tokens")).toBe(tokenFacts(text.usage))
    expect(await page.textContent("#metadata")).toContain('"run": "r1"')
    expect(await page.isDisabled("#cancel")).toBe(true)
    await shot("response-text")

    await page.goBack()
    await page.click(`#responses tr[data-response="${call.id}"]`)
    await page.waitForSelector("#output .function-name")
    expect(await page.textContent("#output .function-name")).toBe("get_weather")
    expect(await page.textContent("#output .function-arguments")).toBe(JSON.stringify({ city: "Paris" }, null, 2))
    expect(await page.textContent("#output .reasoning")).toBe("The weather needs a lookup.")
    expect(await page.textContent("#tokens")).toBe("1,240 (1,200 in, 1,024 cached; 40 out, 12 reasoning)")
    expect(await page.textContent("#tokens")).toBe(tokenFacts(call.usage))
    await shot("response-function-call")
  })

  it("lists streams with their counters; a stream's page follows its items live, newest first; a cancelled item shows cancelled", async () => {
    const stream = (await api()("POST", "/v1/streams", { name: "nightly-eval", window: "1h" })).body
    const item = (customId: string, input: string, model = "glm-5.3-flash") =>
      create({ model, input, metadata: { stream_id: stream.id, custom_id: customId } })
    const ids: Array<string> = []
    for (const n of [1, 2, 3]) ids.push((await item(`ok-${n}`, `question ${n}`)).id)
    ids.push((await item("bad-1", `refused ${simDirective.status(400)}`)).id)
    ids.push((await item("held-1", `held ${simDirective.hang}`, "slow")).id)
    const closed = (await api()("POST", "/v1/streams", { name: "closed-early" })).body
    expect((await api()("PATCH", `/v1/streams/${closed.id}`, { status: "cancelled" })).status).toBe(200)
    let detail: any
    await waitFor("three items completed, one failed and one running", async () => {
      detail = (await api()("GET", `/v1/streams/${stream.id}`)).body
      return detail.completed_items === 3 && detail.failed_items === 1 && detail.running_items === 1
    })
    expect(detail.total_tokens).toBeGreaterThan(0)

    await page.click('header a[href="#/streams"]')
    await page.waitForSelector(`#streams tr[data-stream="${stream.id}"]`)
    expect(await page.$$eval("#streams tbody tr", (trs) => trs.map((tr) => tr.getAttribute("data-stream")))).toEqual([closed.id, stream.id])
    const row = `#streams tr[data-stream="${stream.id}"]`
    expect(await page.textContent(`${row} a`)).toBe("nightly-eval")
    expect(await cell(row, "window")).toBe("1h")
    expect(await status(row)).toBe("open")
    const figures = (r: string) =>
      Promise.all(["total_items", "pending_items", "running_items", "completed_items", "failed_items", "cancelled_items"].map((c) => cell(r, c)))
    expect(await figures(row)).toEqual(["5", "0", "1", "3", "1", "0"])
    expect(await cell(row, "tokens")).toBe(count(detail.total_tokens))
    expect(await status(`#streams tr[data-stream="${closed.id}"]`)).toBe("cancelled")
    expect(await figures(`#streams tr[data-stream="${closed.id}"]`)).toEqual(["0", "0", "0", "0", "0", "0"])
    await shot("streams")

    await page.click(row)
    await page.waitForSelector("#stream-items")
    expect(await page.textContent("#status")).toBe("open")
    expect(await page.textContent("#priority")).toBe("standard")
    expect(await page.textContent("#settled")).toBe("4 / 5")
    expect(await page.textContent("#tokens")).toBe(
      `${count(detail.total_tokens)} (${count(detail.total_prompt_tokens)} in; ${count(detail.total_completion_tokens)} out)`,
    )
    expect(await listed("stream-items")).toEqual([...ids].reverse())
    expect(await column("stream-items", "custom-id")).toEqual(["held-1", "bad-1", "ok-3", "ok-2", "ok-1"])
    expect(await page.$$eval("#stream-items tbody .status", (s) => s.map((e) => e.textContent))).toEqual([
      "in_progress",
      "failed",
      "completed",
      "completed",
      "completed",
    ])

    // An item that arrives while the page is open shows up without a reload, waiting behind the held one.
    const waiting = (await item("waits-1", "waits for the slot", "slow")).id
    await expect.poll(() => page.textContent("#total_items"), { timeout: 30_000 }).toBe("6")
    expect(await page.textContent("#pending_items")).toBe("1")
    expect((await listed("stream-items"))[0]).toBe(waiting)
    await shot("stream-live")

    await page.click(`#stream-items tr[data-response="${waiting}"]`)
    await page.waitForSelector("#cancel:not([disabled])")
    expect(await page.textContent("#status")).toBe("in_progress")
    expect(await page.textContent("#custom-id")).toBe("waits-1")
    await page.click("#cancel")
    await expect.poll(() => page.textContent("#status"), { timeout: 30_000 }).toBe("cancelled")
    expect((await api()("GET", `/v1/responses/${waiting}`)).body.status).toBe("cancelled")
    await shot("response-cancelled")

    await page.click("#stream a")
    await page.waitForSelector(`#stream-items tr[data-response="${waiting}"]`)
    expect(await page.textContent("#cancelled_items")).toBe("1")
    expect(await page.textContent("#pending_items")).toBe("0")
    expect(await status(`#stream-items tr[data-response="${waiting}"]`)).toBe("cancelled")
    expect(await page.textContent("#settled")).toBe("5 / 6")

    const failed = ids[3]!
    await page.click(`#stream-items tr[data-response="${failed}"]`)
    await page.waitForSelector("#response-error")
    const failure = (await api()("GET", `/v1/responses/${failed}`)).body
    expect(failure.status).toBe("failed")
    expect(await page.textContent("#response-error")).toBe(`${failure.error.code}: ${failure.error.message}`)

    await page.click('header a[href="#/streams"]')
    await page.waitForSelector(row)
    expect(await figures(row)).toEqual(["6", "0", "1", "3", "1", "1"])

    // The responses list filtered by the stream: its items only, in the API's order.
    await page.click('header a[href="#/responses"]')
    await page.waitForSelector("#responses")
    await page.selectOption("#filter-stream", stream.id)
    await expect.poll(() => listed("responses")).toEqual([waiting, ...[...ids].reverse()])
    expect(await page.inputValue("#filter-stream")).toBe(stream.id)
    await shot("responses-of-stream")
  })

  it("pages the responses list with after, newest first, and back", async () => {
    for (let n = 0; n < 16; n++) await create({ model: "glm-5.3-flash", input: `bulk ${n}`, background: true })
    const all = (await api()("GET", "/v1/responses?limit=100")).body.data.map((r: { id: string }) => r.id)
    expect(all.length).toBe(24)

    await page.goto(`${sluice.url}/console/#/responses`)
    await page.waitForSelector("#responses-older")
    const first = await listed("responses")
    expect(first).toEqual(all.slice(0, 20))
    expect(await page.$("#responses-newer")).toBeNull()
    await page.click("#responses-older")
    await expect.poll(() => listed("responses")).toEqual(all.slice(20))
    expect(await page.$("#responses-older")).toBeNull()
    await page.click("#responses-newer")
    await expect.poll(() => listed("responses")).toEqual(first)
    expect(pageErrors).toEqual([])
  })
})
