import { createServer, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { nextUtcMidnight } from "../../src/domain/account/utcDay.js"
import { heldCalls } from "../../src/domain/scheduling/batchSlots.js"
import { simDirective } from "../../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { chatRow, client } from "../support/client.js"
import { type InProcessSluice, startInProcessSluice } from "../support/inProcessSluice.js"
import { BOOTSTRAP_KEY } from "../support/sluice.js"
import { waitFor as waitUntil } from "../support/waitFor.js"

/*
 * POST /v1/chat/completions: interactive traffic Sluice serves itself, proxied to the model's
 * upstream; and the batch side giving way to it (fewer batch slots while interactive requests are in
 * flight, fewer again while the upstream pushes back). Counts are observed at the simulator; the
 * waits only poll, with generous limits as safety nets.
 */


// Every 10 ms: the give-way tests sample the simulator's load at each poll.
const waitFor = (what: string, check: () => boolean | Promise<boolean>) => waitUntil(what, check, { everyMs: 10 })

const chat = (baseUrl: string, body: unknown, init: { key?: string | null; signal?: AbortSignal } = {}) =>
  fetch(`${baseUrl}/v1/chat/completions`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(init.key === null ? {} : { authorization: `Bearer ${init.key ?? BOOTSTRAP_KEY}` }),
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...(init.signal === undefined ? {} : { signal: init.signal }),
  })

const json = (response: Response): Promise<any> => response.json()

const ask = (content: string, extra: object = {}, model = "glm-5.3-flash") => ({
  model,
  messages: [{ role: "user", content }],
  ...extra,
})

/** The parts of a completion that differ between two answers to the same request. */
const stable = (text: string) => text.replace(/"id":"[^"]*"/g, '"id":"-"').replace(/"created":\d+/g, '"created":0')

const events = (text: string) => text.split("\n\n").filter((e) => e.length > 0)

const batchBody = (rows: number, content: (i: number) => string) => ({
  requests: Array.from({ length: rows }, (_, i) => chatRow(`r${i}`, content(i))),
})

describe("POST /v1/chat/completions proxies to the model's upstream", () => {
  let sim: Simulator
  let stepper: Server
  let sluice: InProcessSluice
  /** The stepping upstream sends its first event, then waits for the test to let it finish. */
  const heldOpen: Array<{ res: ServerResponse; closed: Promise<void> }> = []

  beforeAll(async () => {
    sim = await startSimulator()
    stepper = createServer((req, res) => {
      req.resume()
      if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
        res.writeHead(404).end()
        return
      }
      req.on("end", () => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write('data: {"choices":[{"index":0,"delta":{"content":"first"}}]}\n\n')
        heldOpen.push({ res, closed: new Promise((resolve) => res.once("close", () => resolve())) })
      })
    })
    await new Promise<void>((resolve) => stepper.listen(0, "127.0.0.1", resolve))
    const stepperUrl = `http://127.0.0.1:${(stepper.address() as AddressInfo).port}/v1`
    sluice = await startInProcessSluice({
      models: [
        { id: "glm-5.3-flash", upstream_url: sim.url, batch_concurrency: 4 },
        { id: "qwen3.6-35b", upstream_url: sim.url, batch_concurrency: 4 },
        { id: "stepper", upstream_url: stepperUrl, batch_concurrency: 1 },
        { id: "priced", upstream_url: sim.url, upstream_model: "glm-5.3-flash", input_usd_per_mtok: 1, output_usd_per_mtok: 1 },
      ],
    })
  })
  afterAll(async () => {
    await sluice?.stop()
    await sim?.close()
    stepper?.closeAllConnections()
    await new Promise((r) => stepper?.close(r))
  })

  it("a non-streaming answer is the upstream's own JSON and status", async () => {
    const body = ask("Summarize the plot of Hamlet in two sentences.", { max_tokens: 50 })
    const direct = await (await fetch(`${sim.url}/chat/completions`, { method: "POST", body: JSON.stringify(body) })).text()
    const answer = await chat(sluice.url, body)
    expect(answer.status).toBe(200)
    expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
    const text = await answer.text()
    expect(stable(text)).toBe(stable(direct))
    expect(JSON.parse(text)).toMatchObject({ object: "chat.completion", usage: { prompt_tokens: expect.any(Number) } })
  })

  it("a streamed answer passes the upstream's events on, ending with data: [DONE]", async () => {
    const body = ask(`Name three prime numbers. ${simDirective.tokens(40)}`, { stream: true })
    const direct = await (await fetch(`${sim.url}/chat/completions`, { method: "POST", body: JSON.stringify(body) })).text()
    const answer = await chat(sluice.url, body)
    expect(answer.status).toBe(200)
    expect(answer.headers.get("content-type")).toMatch(/^text\/event-stream/)
    expect(answer.headers.get("content-length")).toBeNull()
    const text = await answer.text()
    expect(stable(text)).toBe(stable(direct))
    expect(events(text).length).toBeGreaterThan(3)
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true)
    // Sluice asks the upstream for the usage chunk to count the cost; the caller, who did not, does not see it.
    expect(text).not.toContain('"usage"')
  })

  it("a stream that asks for its usage gets the usage chunk before [DONE]", async () => {
    const body = ask("Count to five.", { stream: true, stream_options: { include_usage: true } })
    const direct = await (await fetch(`${sim.url}/chat/completions`, { method: "POST", body: JSON.stringify(body) })).text()
    const text = await (await chat(sluice.url, body)).text()
    expect(stable(text)).toBe(stable(direct))
    const all = events(text)
    expect(JSON.parse(all[all.length - 2]!.slice("data: ".length))).toMatchObject({ choices: [], usage: { total_tokens: expect.any(Number) } })
  })

  it("each event reaches the client as soon as the upstream sends it, not when the answer ends", async () => {
    const answer = await chat(sluice.url, ask("step by step", { stream: true }, "stepper"))
    expect(answer.status).toBe(200)
    const reader = answer.body!.getReader()
    const decoder = new TextDecoder()
    let received = ""
    // The upstream sends nothing more until the first event has arrived here: a buffering proxy never gets this far.
    while (!received.includes("\n\n")) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`the stream ended after ${JSON.stringify(received)}`)
      received += decoder.decode(value, { stream: true })
    }
    expect(received).toBe('data: {"choices":[{"index":0,"delta":{"content":"first"}}]}\n\n')
    expect(heldOpen).toHaveLength(1)
    heldOpen[0]!.res.end('data: {"choices":[{"index":0,"delta":{"content":"second"}}]}\n\ndata: [DONE]\n\n')
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      received += decoder.decode(value, { stream: true })
    }
    expect(events(received)).toEqual([
      'data: {"choices":[{"index":0,"delta":{"content":"first"}}]}',
      'data: {"choices":[{"index":0,"delta":{"content":"second"}}]}',
      "data: [DONE]",
    ])
  })

  it("a client that goes away mid-stream closes the upstream request too", async () => {
    const controller = new AbortController()
    const answer = await chat(sluice.url, ask("abandoned", { stream: true }, "stepper"), { signal: controller.signal })
    const reader = answer.body!.getReader()
    await reader.read()
    await waitFor("the upstream holds the stream open", () => heldOpen.length === 2)
    controller.abort()
    await heldOpen[1]!.closed
  })

  it("a client that goes away before the answer is counted as 499 (client closed), not as a server error", async () => {
    const requests = async (status: number) => {
      const text = await (await fetch(`${sluice.url}/metrics`)).text()
      const line = text
        .split("\n")
        .find((l) => l.startsWith("sluice_http_request_duration_seconds_count{") && l.includes('route="/v1/chat/completions"') && l.includes(`status="${status}"`))
      return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
    }
    const before = { aborted: await requests(499), failed: await requests(500) }
    const controller = new AbortController()
    const sent = chat(sluice.url, ask(`slow ${simDirective.latency(5_000)}`), { signal: controller.signal })
    await waitFor("the upstream has the request", () => sim.stats().inFlight > 0)
    controller.abort()
    await expect(sent).rejects.toThrow()
    await waitFor("the aborted request to be counted", async () => (await requests(499)) === before.aborted + 1)
    expect(await requests(500)).toBe(before.failed)
  })

  it("the upstream's error status and envelope are passed on, 429 with its Retry-After", async () => {
    const body = ask(`bad ${simDirective.status(422)}`)
    const direct = await fetch(`${sim.url}/chat/completions`, { method: "POST", body: JSON.stringify(body) })
    const invalid = await chat(sluice.url, body)
    expect(invalid.status).toBe(422)
    expect(await invalid.text()).toBe(await direct.text())
    const limited = await chat(sluice.url, ask(`busy ${simDirective.status(429)}`, { stream: true }))
    expect(limited.status).toBe(429)
    expect(limited.headers.get("retry-after")).toBe("1")
    expect((await json(limited)).error.code).toBe("rate_limit_exceeded")
  })

  it("401 without a key or with an unknown one", async () => {
    for (const key of [null, "sk-not-a-key"]) {
      const answer = await chat(sluice.url, ask("hello"), { key })
      expect(answer.status).toBe(401)
      expect((await json(answer)).error).toMatchObject({ type: "authentication_error", code: "invalid_api_key" })
    }
  })

  it("404 for a model not in the catalog, and for one the account may not use", async () => {
    const unknown = await chat(sluice.url, ask("hello", {}, "no-such-model"))
    expect(unknown.status).toBe(404)
    expect(await json(unknown)).toEqual({
      error: { message: "Model 'no-such-model' not found", type: "invalid_request_error", param: null, code: "model_not_found" },
    })
    const api = client(sluice.url)
    expect((await api.admin("POST", "/admin/v1/accounts", { id: "qwen-only", models: ["qwen3.6-35b"] })).status).toBe(200)
    const key = (await api.admin("POST", "/admin/v1/accounts/qwen-only/keys", {})).body.key as string
    const refused = await chat(sluice.url, ask("hello"), { key })
    expect(refused.status).toBe(404)
    expect((await json(refused)).error.message).toBe("Model 'glm-5.3-flash' not found")
    expect((await chat(sluice.url, ask("hello", {}, "qwen3.6-35b"), { key })).status).toBe(200)
  })

  it("400 for a body that is not a chat-completion request, before anything reaches the upstream", async () => {
    const before = sim.stats().received
    const cases: Array<[unknown, RegExp]> = [
      ["{not json", /not valid JSON/],
      ["", /empty/],
      [[1, 2], /chat-completion request object/],
      [{ messages: [{ role: "user", content: "hi" }] }, /^model must be a string naming a model, got nothing$/],
      [{ model: "glm-5.3-flash" }, /^messages must be a non-empty array of messages, got nothing$/],
      [{ model: "glm-5.3-flash", messages: [] }, /^messages must be /],
      [{ model: "glm-5.3-flash", messages: ["hi"] }, /^messages\[0\] must be a message object with a role, got "hi"$/],
      [ask("hi", { stream: "yes" }), /^stream must be true or false, got "yes"$/],
      [ask("hi", { temperature: 9 }), /^temperature must be a number from 0 to 2, got 9$/],
    ]
    for (const [body, message] of cases) {
      const answer = await chat(sluice.url, body)
      expect(answer.status).toBe(400)
      const error = (await json(answer)).error
      expect(error.type).toBe("invalid_request_error")
      expect(error.message).toMatch(message)
    }
    expect(sim.stats().received).toBe(before)
  })

  const newKey = async (id: string, settings: object) => {
    const api = client(sluice.url)
    expect((await api.admin("POST", "/admin/v1/accounts", { id, ...settings })).status).toBe(200)
    return (await api.admin("POST", `/admin/v1/accounts/${id}/keys`, {})).body.key as string
  }

  it("a request holds one of the account's concurrent-request slots: 429 while none is free", async () => {
    const key = await newKey("one-slot", { concurrency: 1 })
    const controller = new AbortController()
    const hungBefore = sim.stats().hung
    chat(sluice.url, ask(`holding ${simDirective.hang}`), { key, signal: controller.signal }).catch(() => undefined)
    await waitFor("the first request is at the simulator", () => sim.stats().hung > hungBefore)
    const refused = await chat(sluice.url, ask("second"), { key })
    expect(refused.status).toBe(429)
    expect(refused.headers.get("retry-after")).toBe("1")
    expect((await json(refused)).error).toMatchObject({ type: "rate_limit_error", code: "concurrency_limit_exceeded" })
    controller.abort()
    await waitFor("the slot is free again", async () => (await chat(sluice.url, ask("third"), { key })).status === 200)
  })

  it.each([false, true])("an answer's cost counts toward the account's daily quota (stream: %s)", async (stream) => {
    const key = await newKey(`metered-${stream}`, { daily_quota_usd: 0.000001 })
    const first = await chat(sluice.url, ask("What does it cost?", { stream }, "priced"), { key })
    expect(first.status).toBe(200)
    await first.text()
    const next = await chat(sluice.url, ask("And now?", {}, "priced"), { key })
    expect(next.status).toBe(429)
    // The seconds until the quota renews at 00:00 UTC, on the actors' clock.
    const now = await sluice.now()
    expect(Number(next.headers.get("retry-after"))).toBe(Math.ceil((nextUtcMidnight(now) - now) / 1000))
    expect((await json(next)).error.code).toBe("insufficient_quota")
  })

  it("the endpoint is in /openapi.json", async () => {
    const spec = await json(await fetch(`${sluice.url}/openapi.json`))
    expect(Object.keys(spec.paths["/v1/chat/completions"])).toEqual(["post"])
  })
})

/**
 * A model's batch rows at the simulator while k interactive requests hang there: max(1, concurrency - k)
 * at most, over the next six rows to complete; all of them once the interactive ones are let go.
 */
const givesWay = (concurrency: number, ks: ReadonlyArray<number>) => {
  let sim: Simulator
  let sluice: InProcessSluice
  // The rows a model of this size holds started beyond its slots (heldCalls), which Sluice counts as running.
  const heldRows = heldCalls(concurrency)

  beforeAll(async () => {
    sim = await startSimulator()
    sluice = await startInProcessSluice({
      models: [{ id: "glm-5.3-flash", upstream_url: sim.url, batch_concurrency: concurrency, timeout_ms: 60_000 }],
    })
  })
  afterAll(async () => {
    await sluice?.stop()
    await sim?.close()
  })

  it(`with batch_concurrency ${concurrency}, k interactive requests in flight leave max(1, ${concurrency} - k) batch rows at the model, and all ${concurrency} after`, async () => {
    const api = client(sluice.url)
    const created = await api.call("POST", "/v1/batches", batchBody(100 * concurrency, (i) => `row ${i} ${simDirective.latency(300)}`))
    expect(created.status).toBe(200)
    // Interactive requests hang at the simulator until the test lets go of them, so every one is in flight there.
    const hungBefore = sim.stats().hung
    const held: Array<AbortController> = []
    const batchAtSim = () => sim.stats().inFlight - (sim.stats().hung - hungBefore)

    await waitFor(`${concurrency} batch rows run`, () => batchAtSim() === concurrency)
    const observed: Record<number, number> = {}
    for (const k of ks) {
      while (held.length < k) {
        const controller = new AbortController()
        held.push(controller)
        chat(sluice.url, ask(`interactive ${held.length} ${simDirective.hang}`), { signal: controller.signal }).catch(() => undefined)
      }
      await waitFor(`${k} interactive requests are at the simulator`, () => sim.stats().hung - hungBefore === k)
      const slots = Math.max(1, concurrency - k)
      await waitFor(`batch rows drop to ${slots}`, () => batchAtSim() === slots)
      // Over the next six rows to complete, no more than the policy's number run at once.
      const completed = sim.stats().answered[200] ?? 0
      let most = 0
      await waitFor("six more rows complete", () => {
        most = Math.max(most, batchAtSim())
        return (sim.stats().answered[200] ?? 0) >= completed + 6
      })
      observed[k] = most
    }
    expect(observed).toEqual(Object.fromEntries(ks.map((k) => [k, Math.max(1, concurrency - k)])))

    // Once let go, the interactive requests are no longer counted by hangs; Sluice's own view of its rows confirms them all.
    for (const controller of held) controller.abort()
    const runningRows = async () => (await api.allResults(created.body.id)).filter((r) => r.status === "running").length
    await waitFor(`${concurrency} batch rows run again`, async () => sim.stats().inFlight === concurrency && (await runningRows()) === concurrency + heldRows)
    const results = await api.allResults(created.body.id)
    expect(results.filter((r) => r.status === "completed").length).toBeGreaterThan(concurrency)
    await api.call("POST", `/v1/batches/${created.body.id}/cancel`)
    await api.waitFinal(created.body.id)
  })
}

describe("batch rows give way to interactive requests on the same model", () => givesWay(4, [1, 3, 5]))

describe("batch rows give way to interactive requests on a model that holds rows beyond its slots", () =>
  givesWay(16, [2, 9, 17]))

describe("pushback from the upstream shrinks a model's batch slots, which then recover", () => {
  let sim: Simulator
  let sluice: InProcessSluice

  beforeAll(async () => {
    sim = await startSimulator()
    sluice = await startInProcessSluice({
      models: [{ id: "glm-5.3-flash", upstream_url: sim.url, batch_concurrency: 4, timeout_ms: 60_000 }],
    })
  })
  afterAll(async () => {
    await sluice?.stop()
    await sim?.close()
  })

  /** The most requests in flight at the simulator while `until` is false, polled. */
  const mostInFlightUntil = async (what: string, until: () => boolean) => {
    let most = 0
    await waitFor(what, () => {
      most = Math.max(most, sim.stats().inFlight)
      return until()
    })
    return most
  }

  const answered = (status: number) => sim.stats().answered[status] ?? 0

  it("429s halve the slots once per second of the actors' clock; each calm second gives one back", async () => {
    const api = client(sluice.url)
    // The first 12 attempts of these identical rows are answered 429, the rest succeed.
    const created = await api.call("POST", "/v1/batches", batchBody(40, () => `burst ${simDirective.fail(12, 429)} ${simDirective.latency(200)}`))
    expect(created.status).toBe(200)
    const before = await mostInFlightUntil("the first 429 comes back", () => answered(429) > 0)
    expect(before).toBe(4)
    await waitFor("12 attempts were answered 429", () => answered(429) === 12)
    // The test clock stands still, so every 429 fell in the window of the first cut: 4 → 2, no further.
    const cut = await mostInFlightUntil("every row not waiting for a retry has completed", () => answered(200) === 28)
    expect(cut).toBe(2)

    // Time passes: the 12 rows' retries come due, and the slots come back one a second, up to 4.
    await sluice.adjust(5_000)
    const recovered = await mostInFlightUntil("the retried rows have completed", () => answered(200) === 40)
    expect(recovered).toBe(4)
    const batch = await api.waitFinal(created.body.id)
    expect(batch.request_counts).toEqual({ total: 40, completed: 40, failed: 0 })
  })

  it("an interactive request answered 503 is pushback too", async () => {
    await sluice.adjust(5_000)
    const answer = await chat(sluice.url, ask(`overloaded ${simDirective.status(503)}`))
    expect(answer.status).toBe(503)
    const api = client(sluice.url)
    const created = await api.call("POST", "/v1/batches", batchBody(12, (i) => `after ${i} ${simDirective.latency(200)}`))
    const done = answered(200)
    const cut = await mostInFlightUntil("the batch has completed", () => answered(200) === done + 12)
    expect(cut).toBe(2)
    expect((await api.waitFinal(created.body.id)).request_counts.completed).toBe(12)
  })
})

describe("a long waiting queue at a vLLM upstream is pushback too", () => {
  let upstream: Server
  let sluice: InProcessSluice
  let inFlight = 0
  let completed = 0
  let metricsRead = 0
  let congested = false

  beforeAll(async () => {
    // A vLLM-like upstream: 200 ms per completion, and a /metrics gauge the test sets.
    upstream = createServer((req, res) => {
      if (req.method === "GET" && req.url === "/metrics") {
        metricsRead++
        res.writeHead(200, { "content-type": "text/plain" })
        res.end(`vllm:num_requests_waiting{engine="0",model_name="org/congested"} ${congested ? 10 : 0}.0\n`)
        return
      }
      req.resume()
      req.on("end", () => {
        inFlight++
        setTimeout(() => {
          inFlight--
          completed++
          res.writeHead(200, { "content-type": "application/json" })
          res.end(JSON.stringify({ id: "c", object: "chat.completion", created: 0, model: "org/congested", choices: [] }))
        }, 200)
      })
    })
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve))
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`
    sluice = await startInProcessSluice({
      models: [{ id: "congested", upstream_model: "org/congested", upstream_url: url, batch_concurrency: 4, timeout_ms: 60_000 }],
    })
  })
  afterAll(async () => {
    await sluice?.stop()
    upstream?.closeAllConnections()
    await new Promise((r) => upstream?.close(r))
  })

  it("halves the model's batch slots while the gauge reads at least its batch_concurrency", async () => {
    const api = client(sluice.url)
    const created = await api.call("POST", "/v1/batches", {
      requests: Array.from({ length: 400 }, (_, i) => chatRow(`r${i}`, `row ${i}`, "congested")),
    })
    expect(created.status).toBe(200)
    await waitFor("4 batch rows run", () => inFlight === 4)
    congested = true
    const readBefore = metricsRead
    await waitFor("Sluice reads the gauge", () => metricsRead > readBefore)
    // The gauge's request arriving is not Sluice having read its answer: wait for the halved limit
    // itself, then for the rows started before it to drain (inFlight can dip to 2 between a row's end
    // and the next start before the limit applies).
    const limit = async () =>
      ((await api.admin("GET", "/admin/v1/models")).body.data as ReadonlyArray<{ id: string; slots_limit: number }>).find((m) => m.id === "congested")!
        .slots_limit
    await waitFor("Sluice halves the model's slots", async () => (await limit()) === 2)
    await waitFor("batch rows drop to 2", () => inFlight === 2)
    // Over the next eight rows to complete, no more than 2 run at once.
    const before = completed
    let most = 0
    await waitFor("eight more rows complete", () => {
      most = Math.max(most, inFlight)
      return completed >= before + 8
    })
    expect(most).toBe(2)

    congested = false
    const readCongested = metricsRead
    await waitFor("Sluice reads the short queue", () => metricsRead > readCongested)
    await sluice.adjust(5_000)
    await waitFor("4 batch rows run again", () => inFlight === 4)
    await api.call("POST", `/v1/batches/${created.body.id}/cancel`)
    await api.waitFinal(created.body.id)
  })
})
